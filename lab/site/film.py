"""The request film's markup: its canvas, its buttons and sliders, and its first data, written at build time.

`static/film.js` plays it: it reads the film (`lab.page.figures.film`) from
the `#film-data` block the view rewrites on every change, draws each frame
on the canvas, and keeps its state in the element's `data-film-*`
attributes (`state`: playing, paused or offscreen; `motion`: full or
reduced; `frames`: animation frames drawn; `t`: the run second shown;
`following`: the followed request's index; `draw-ms`: the median and the worst
drawing time of the last 120 animation frames), which tests and bench/ read.
Every control is a plain button or slider with its own name. On the full page (`compact`) the film stands
first, before the charts, with Play and Step in sight and its speed, its moment and "Follow the next
request" behind "More" (a section the bridge remembers open or closed), so that free play's first screen
stays within its count of controls; an embed shows them all.
"""

import html
import json

__all__ = ["film_html"]

INVITE = ("Press Play: each request goes from the router to a replica and lights up by how much of its prompt that "
          "replica had cached. Click one to follow it.")  # what the film says until a request is followed
SPEEDS = ("0.1", "0.25", "0.5", "1", "2")  # run seconds a second; film.js reads the same list from the slider


def canvas_height(replicas: int) -> int:
    """The canvas's height in CSS pixels for a fleet (static/film.js sizes it the same way), reserved at first paint."""
    lane = max(18.0, min(44.0, 360 / max(1, replicas)))
    return round(36 + max(1, replicas) * lane)


def film_html(view: dict, compact: bool = False) -> str:
    """The film's markup with the default setup's film in it (the view's `#film-data` patch); `compact`: its
    speed, moment and follow button wait behind "More" (the full page's)."""
    # A data block of its own type: never taken for Bokeh's (`script[type="application/json"]`, lab/site/pagedocs.py)
    data = view["patches"]["dom"]["#film-data"]["text"].replace("</", "<\\/")
    caption = html.escape(view["patches"]["dom"]["#cap-film"]["text"])
    speeds = html.escape(",".join(SPEEDS))
    replicas = json.loads(view["patches"]["dom"]["#film-data"]["text"])["replicas"]
    return f"""<div class="film" data-film-state="paused" data-film-motion="full" data-film-frames="0" data-film-t="0" data-film-following="">
  <div class="film-tools" role="group" aria-label="Play the requests">
    <button type="button" class="film-play" aria-pressed="false">Play</button>
    <button type="button" class="film-step">Step</button>
    <details class="film-more"{' data-remember="film-more"' if compact else " open"}><summary>More</summary><span class="film-more-tools">
    <label class="film-speed">Speed <input type="range" min="0" max="{len(SPEEDS) - 1}" step="1" value="1" data-speeds="{speeds}" aria-valuetext="0.25 times real time"><output>0.25×</output></label>
    <label class="film-time">Time in the run <input type="range" min="0" max="60" step="0.01" value="0" aria-valuetext="0 s"><output>0 s</output></label>
    <button type="button" class="film-follow" aria-pressed="false">Follow the next request</button>
    </span></details>
  </div>
  <canvas class="film-canvas" role="img" aria-label="{caption}" width="600" height="{canvas_height(replicas)}" style="height: {canvas_height(replicas)}px"></canvas>
  <p class="film-said" aria-live="polite">{INVITE}</p>
  <p class="film-key" aria-hidden="true"><span><i class="k-wait"></i>on its way or waiting</span> <span><i class="k-hit"></i>found in the cache</span> <span><i class="k-miss"></i>computed</span> <span><i class="k-gone"></i>evicted</span></p>
  <script id="film-data" type="application/prefix-lab-film+json">{data}</script>
</div>"""
