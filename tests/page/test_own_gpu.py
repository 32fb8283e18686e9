"""A person's own GPU fit (`prefix-lab profile fit`) runs the lab: the CLI and the page read the file, hand its
coefficients to the model as `hardware.gpu_fit`, and every run, figure and link prices passes on them."""

import json

import pytest
from conftest import cli_json

from lab.cli.main import main
from lab.page import figures, view
from lab.page.fitfile import fit_to_json
from lab.page.urlstate import read_hash, write_hash
from model import FITS, PRESETS, Scenario, ScenarioError, fit_of_text, fit_text, simulate
from model.gpus.profile import profile_of

MEASURED = {"hardware.preset": "llama8b_a100", "fleet.decode": "true"}


def faster(fit, by=2.0):
    """`fit` with its matrix products `by` times faster (FLOP/s and bytes/s), as a person's other GPU."""
    return fit._replace(name="mine", gemm_flops_per_s=fit.gemm_flops_per_s * by,
                        gemm_bytes_per_s=fit.gemm_bytes_per_s * by)


@pytest.mark.parametrize("gpu", sorted(FITS))
def test_a_fit_written_as_text_reads_back_to_the_bit(gpu):
    back = fit_of_text(fit_text(FITS[gpu]))
    assert back._replace(source="") == FITS[gpu]._replace(source="")
    assert fit_text(back) == fit_text(FITS[gpu])


def test_a_run_on_a_fit_of_the_presets_own_gpu_is_the_presets_run_and_a_faster_gpu_is_faster():
    own = Scenario().with_text(MEASURED)
    same = own.with_values({"hardware.gpu_fit": fit_text(FITS["a100"])})
    mine = own.with_values({"hardware.gpu_fit": fit_text(faster(FITS["a100"]))})
    base, again, fast = simulate(own).summary(), simulate(same).summary(), simulate(mine).summary()
    assert again == base
    assert fast["ttft_p50_ms"] < base["ttft_p50_ms"] and fast["tpot_p50_ms"] < base["tpot_p50_ms"]
    profile, notes = profile_of(mine)
    assert profile.measured.fit.name == "mine"
    assert notes == ("Llama 3.1 8B on A100 (llama8b_a100) is priced by your GPU fit mine (hardware.gpu_fit) in place "
                     "of the A100 fitted to Vidur's profiles",)


@pytest.mark.parametrize("preset, says", [("lab", "takes its speed from fleet.prefill_tokens_per_s"),
                                           ("article_14b_h100", "the article's spec-sheet arithmetic")])
def test_a_fit_on_a_preset_no_fit_prices_changes_nothing_and_says_why(preset, says):
    plain = Scenario().with_text({"hardware.preset": preset})
    fitted = plain.with_values({"hardware.gpu_fit": fit_text(faster(FITS["h100"]))})
    result = simulate(fitted)
    assert result.summary() == simulate(plain).summary()
    assert [n for n in result.notes if "hardware.gpu_fit is not used" in n and says in n]


TEXT = fit_text(FITS["a100"])


@pytest.mark.parametrize("text, message", [
    ("a100", "not a GPU fit's text"),
    (TEXT.replace("gpufit1", "gpufit9"), "not a GPU fit's text"),
    (TEXT.replace(",128,", ",many,", 1), "malformed number"),
    (TEXT.replace(",128,", ",0,", 1), "tile must be 1 to 65536"),
    (TEXT.replace(",4,emb:", ",3,emb:", 1), "blend one of 1, 2, 4, 8"),
    (TEXT.replace("mlp_act:", "softmax:"), "lacks elementwise coefficients for mlp_act"),
    (TEXT.replace("@1024.0:", "@100.0:"), "increasing sequence lengths"),
    (TEXT.replace("1548580000000.0", "nan"), "nan bytes per second"),
    (TEXT.replace("226236000000000.0", "1e30"), r"1e\+30 FLOP per second, outside what a GPU can measure"),
    (TEXT.replace(",a100,", ",my gpu,", 1), "name must be 1-40 letters"),
    (TEXT + ",@1:1e13" * 600, "at most 4,096 characters"),
])
def test_a_bad_fit_text_is_refused_naming_the_key_and_the_fix(text, message):
    with pytest.raises(ScenarioError, match=message) as info:
        Scenario().with_values({"hardware.gpu_fit": text})
    assert str(info.value).startswith("hardware.gpu_fit: ")


def test_a_fit_rides_in_the_url_and_the_same_url_gives_the_same_run():
    scenario = Scenario().with_text(MEASURED).with_values({"hardware.gpu_fit": fit_text(faster(FITS["a100"]))})
    fragment = write_hash(scenario, {})
    assert "hardware.gpu_fit=gpufit1" in fragment
    assert read_hash(fragment).scenario == scenario


@pytest.fixture
def fit_file(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(fit_to_json(faster(FITS["a100"]))))
    return path


def test_the_cli_reads_a_fit_file_into_the_scenario(fit_file, capsys):
    sets = [a for k, v in MEASURED.items() for a in ("--set", f"{k}={v}")]
    assert main(["run", *sets, "--gpu-fit", str(fit_file), "--json"]) == 0
    by_file = json.loads(capsys.readouterr().out)
    by_key = cli_json(*(f"{k}={v}" for k, v in MEASURED.items()), f"hardware.gpu_fit={fit_text(faster(FITS['a100']))}")
    own = cli_json(*(f"{k}={v}" for k, v in MEASURED.items()))
    assert by_file == by_key and by_file["ttft_p50_ms"] < own["ttft_p50_ms"]
    assert main(["run", *sets, "--gpu-fit", str(fit_file)]) == 0
    assert "note: Llama 3.1 8B on A100 (llama8b_a100) is priced by your GPU fit mine" in capsys.readouterr().out


@pytest.mark.parametrize("content, message", [
    (None, "--gpu-fit: cannot read GPU fit"),
    ('{"kind": "something else"}', "--gpu-fit: {path}: not a GPU fit"),
    ("{", "--gpu-fit: {path}: not a GPU fit (not JSON"),
])
def test_a_bad_fit_file_on_the_command_line_is_one_line_and_status_2(tmp_path, capsys, content, message):
    path = tmp_path / "fit.json"
    if content is not None:
        path.write_text(content)
    assert main(["run", "--gpu-fit", str(path)]) == 2
    err = capsys.readouterr().err
    assert message.format(path=path) in err and err.count("\n") == 1 and "Traceback" not in err


# -- the page: the view's action, the section's words, the figures ---------------------------------------

def act(state, action):
    return view.update(state, {"action": action})


def test_choosing_a_fit_on_the_page_runs_a_measured_model_on_it_and_the_way_back_keeps_the_model():
    state = view.read_state({"hash": ""})
    text = json.dumps(fit_to_json(faster(FITS["h100"])))
    chosen = act(state, {"type": "gpu_fit", "name": "mine.json", "text": text})
    hw = chosen.scenario.hardware
    assert hw.gpu_fit == fit_text(faster(FITS["h100"])) and hw.preset == "llama8b_h100"  # the nearer GPU's model
    said = view._gpu_fit_dom(chosen.scenario)
    assert said["#gpu-fit-off"] == {"hidden": False}
    assert said["#gpu-fit-status"]["text"].startswith(f"{PRESETS['llama8b_h100'].label} runs on your GPU fit mine")
    back = act(chosen, {"type": "gpu_fit_off"})
    assert back.scenario.hardware.gpu_fit == "" and back.scenario.hardware.preset == "llama8b_h100"
    assert view._gpu_fit_dom(back.scenario)["#gpu-fit-off"] == {"hidden": True}


@pytest.mark.parametrize("text, message", [
    ("not json", "mine.json: not a GPU fit (not JSON"),
    (json.dumps({"kind": "prefix-lab gpu fit"}), "mine.json: a GPU fit with a missing or bad field"),
    (None, "mine.json: not a GPU fit"),
])
def test_a_file_that_is_not_a_fit_leaves_the_setup_and_says_why(text, message):
    state = view.read_state({"hash": ""})
    after = act(state, {"type": "gpu_fit", "name": "mine.json", "text": text})
    assert after.scenario == state.scenario
    assert any(n.startswith(message) for n in after.notices)


def test_a_mission_keeps_its_hardware():
    state = view.read_state({"hash": "mission=first-light"})
    after = act(state, {"type": "gpu_fit", "name": "mine.json", "text": json.dumps(fit_to_json(FITS["h100"]))})
    assert after.scenario == state.scenario and any("leave the mission" in n for n in after.notices)


def test_the_prefill_figure_on_a_persons_fit_draws_no_vidur_dots_and_says_whose_gpu_it_is():
    scenario = Scenario().with_text(MEASURED)
    mine = scenario.with_values({"hardware.gpu_fit": fit_text(faster(FITS["a100"]))})
    context = figures.Context(mine, simulate(mine), simulate)
    drawn = figures.FIGURES["prefill"].data(context)
    assert drawn["src:prefill_measured"]["data"]["tokens"] == []
    caption = figures.FIGURES["prefill"].caption(context)
    assert "the MINE fitted to measured kernels" in caption and "priced by your GPU fit MINE" in caption
    assert dict(figures.FIGURES["prefill"].example)["hardware.gpu_fit"] == ""  # its offer shows Vidur's dots again
    own = figures.FIGURES["prefill"].data(figures.Context(scenario, simulate(scenario), simulate))
    assert own["src:prefill_measured"]["data"]["tokens"]  # the preset's own GPU: Vidur's dots are drawn
    assert drawn["src:prefill"]["data"]["seconds"][-1] < own["src:prefill"]["data"]["seconds"][-1]
