"""Kernel profiles (issue 27): reading Vidur's CSVs, fitting a GPU to them, checking it, and the commands.

Hand-made profiles are written by `write_profile` from a known GPU, so a fit must find that GPU again; the
shared Vidur files (../shared/profiles/vidur, or PREFIX_LAB_PROFILES) give the leave-one-out bounds.
"""

import csv
import json
import zipfile

import pytest

from lab.cli.main import main
from lab.common.profiles import (
    ProfileError,
    check,
    fit_from_json,
    fit_gpu,
    fit_to_json,
    leave_one_out,
    params_b,
    read_profile,
    shared_profiles,
)
from model import ELEMENTWISE, FITS, FLASH_ATTENTION_2, GEMMS, GpuFit, Shape
from model.gpus.gpu import elementwise_s, gemm_ops, gemm_s, layer_s

OPS = ("emb",) + GEMMS + ELEMENTWISE
STATS = ("min", "max", "mean", "median", "std")
SHAPE_COLUMNS = ("n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp")
EW = (("emb", 2.5e-6, 1.2e-11), ("input_layernorm", 2.6e-6, 5e-12), ("attn_rope", 2.8e-6, 4e-12),
      ("post_attention_layernorm", 2.6e-6, 5.5e-12), ("mlp_act", 1.0e-6, 5e-12), ("add", 1.7e-6, 3e-12))
TRUE = GpuFit("true", 128, 1.5e12, 2.2e14, 8e-6, 4, EW, FLASH_ATTENTION_2["a100"], "made up")
SMALL = Shape(2048, 5632, 16, 16, True, 32000)
MEDIUM = Shape(4096, 11008, 32, 8, True, 32000)
PARALLEL = Shape(2560, 10240, 32, 32, False, 51200, post_attention_norm=False)
TOKENS = (1, 2, 4, 8, 16, 32, 64, 96, 128, 136, 192, 256, 384, 512, 768, 1024, 2048, 4096)


def op_ms(fit, shape, tokens):
    """Each operation's milliseconds for a pass of `tokens`, as the model prices it."""
    out = {"emb": elementwise_s(fit, "emb", tokens * shape.n_embd) * 1000}
    out |= {op: gemm_s(fit, tokens, k, n) * 1000 for op, k, n in gemm_ops(shape)}
    widths = {"input_layernorm": shape.n_embd, "attn_rope": (shape.n_head + shape.n_kv_head) * shape.head_size,
              "post_attention_layernorm": shape.n_embd, "mlp_act": shape.n_expanded_embd, "add": shape.n_embd}
    out |= {op: elementwise_s(fit, op, tokens * w) * 1000 for op, w in widths.items()}
    return out


def write_profile(path, shape, fit=TRUE, tokens=TOKENS, tps=(1,), repeat=(), scale=1.0):
    """A Vidur-like MLP profile of `shape` on `fit`: every op's five statistics (all the median), rows for each
    TP degree in `tps` (heads and MLP split), and the `repeat` num_tokens written twice (the second `scale` times)."""
    ops = [op for op in OPS if shape.post_attention_norm or op != "post_attention_layernorm"]
    header = [f"time_stats.{op}.{s}" for op in ops for s in STATS] + list(SHAPE_COLUMNS) + \
        ["num_tokens", "num_tensor_parallel_workers"]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for tp in tps:
            split = shape._replace(n_head=shape.n_head // tp, n_kv_head=max(1, shape.n_kv_head // tp),
                                   n_expanded_embd=shape.n_expanded_embd // tp, head_dim=shape.n_embd // shape.n_head)
            for t in tokens:
                for k in range(2 if t in repeat else 1):
                    ms = op_ms(fit, split, t)
                    values = [ms[op] * (scale if k else 1.0) for op in ops for _ in STATS]
                    w.writerow(values + [shape.n_head, shape.n_kv_head, shape.n_embd, shape.n_expanded_embd,
                                         shape.vocab_size, shape.use_gated_mlp, t, tp])
    return path


@pytest.fixture
def files(tmp_path):
    return [write_profile(tmp_path / f"x100_org_{name}_mlp.csv", shape)
            for name, shape in (("Small-1b", SMALL), ("Medium-7b", MEDIUM), ("Parallel-2.7b", PARALLEL))]


# -- reading -------------------------------------------------------------------------------------------

def test_a_profile_keeps_one_tp_degree_averages_repeats_and_counts_a_missing_operation_as_absent(tmp_path):
    path = write_profile(tmp_path / "p.csv", PARALLEL, tps=(1, 2), repeat=(64,), scale=3.0)
    p = read_profile(path)
    assert p.tokens == TOKENS and p.tp == 1 and not p.shape.post_attention_norm and not p.shape.use_gated_mlp
    assert "post_attention_layernorm" not in p.ops[0]
    i = TOKENS.index(64)
    assert p.ops[i]["add"] == pytest.approx(2 * op_ms(TRUE, PARALLEL, 64)["add"] / 1000)  # (1 + 3) / 2
    assert p.layer_s(0) == pytest.approx(layer_s(TRUE, PARALLEL, 1))  # the embedding is not part of a layer
    two = read_profile(path, tp=2)
    assert (two.shape.n_head, two.shape.n_expanded_embd, two.shape.head_size) == (16, 5120, 80)
    assert two.layer_s(0) == pytest.approx(layer_s(TRUE, two.shape, 1))


def test_the_size_in_a_profiles_name_decides_whether_its_worst_error_is_bound():
    assert params_b("a100_meta-llama_Llama-2-7b-hf_mlp") == 7.0
    assert params_b("h100_codellama_CodeLlama-34b-Instruct-hf_mlp") == 34.0
    assert params_b("a100_meta-llama_Meta-Llama-3-70B_mlp") == 70.0 and params_b("x_Qwen2.5-1.5B_mlp") == 1.5
    assert params_b("a100_microsoft_phi-2_mlp") is None  # no size given: reported, not bound


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("a,b\n1,2\n", r"not a Vidur MLP profile \(no column time_stats.emb.median\)"),
    (None, "line 3: time_stats.mlp_act.median is 'fast', not a number"),
    ("tp", "no rows with num_tensor_parallel_workers=1"),
    ("short", "line 2: 3 fields, the header has"),
    ("shape", "line 3: the model's shape changes"),
])
def test_a_bad_or_foreign_profile_is_one_line_naming_the_file(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    if text in (None, "tp", "short", "shape"):
        write_profile(path, SMALL, tokens=(1, 2), tps=(2,) if text == "tp" else (1,))
        lines = path.read_text().splitlines()
        header, row = lines[0].split(","), lines[2].split(",")
        if text is None:
            row[header.index("time_stats.mlp_act.median")] = "fast"
        elif text == "shape":
            row[header.index("n_embd")] = "1024"
        lines[2] = ",".join(row)
        if text == "short":
            lines[1] = "1,2,3"
        path.write_text("\n".join(lines) + "\n")
    else:
        path.write_text(text)
    with pytest.raises(ProfileError, match=message) as info:
        read_profile(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


# -- fitting and checking ----------------------------------------------------------------------------------

def test_a_fit_finds_the_gpu_that_made_the_profiles(files):
    fit = fit_gpu([read_profile(f) for f in files], "x100", FLASH_ATTENTION_2["a100"], "test")
    assert (fit.tile, fit.blend) == (TRUE.tile, TRUE.blend)
    for got, want in ((fit.gemm_bytes_per_s, TRUE.gemm_bytes_per_s), (fit.gemm_flops_per_s, TRUE.gemm_flops_per_s),
                      (fit.gemm_floor_s, TRUE.gemm_floor_s)):
        assert got == pytest.approx(want, rel=1e-4)
    for (op, floor, per_value), (op2, floor2, per_value2) in zip(fit.elementwise, TRUE.elementwise):
        assert op == op2 and floor == pytest.approx(floor2, rel=1e-4) and per_value == pytest.approx(per_value2, rel=1e-4)
    result = check(fit, read_profile(files[1]))
    assert result["max_abs_rel_err"] < 1e-4 and len(result["rows"]) == len(TOKENS)


def test_checking_sets_each_measured_layer_beside_the_prediction_from_the_shape_alone(tmp_path):
    slower = TRUE._replace(gemm_bytes_per_s=TRUE.gemm_bytes_per_s / 2)  # memory-bound passes take longer
    path = write_profile(tmp_path / "p.csv", MEDIUM, fit=slower, tokens=(1, 4096))
    result = check(TRUE, read_profile(path))
    first, last = result["rows"]
    assert first["num_tokens"] == 1 and first["measured_ms"] == pytest.approx(layer_s(slower, MEDIUM, 1) * 1000, abs=1e-6)
    assert first["predicted_ms"] == pytest.approx(layer_s(TRUE, MEDIUM, 1) * 1000, abs=1e-6)
    assert first["rel_err"] < -0.3 and abs(last["rel_err"]) < 0.05  # a long pass is compute-bound either way
    assert result["max_abs_rel_err"] == round(abs(first["rel_err"]), 6)
    assert result["median_abs_rel_err"] == round((abs(first["rel_err"]) + abs(last["rel_err"])) / 2, 6)


def test_leaving_a_file_out_refits_on_the_others(files):
    rows = leave_one_out([read_profile(f) for f in files], "x100", FLASH_ATTENTION_2["a100"])
    assert [r["model"] for r in rows] == [f.stem for f in files]
    assert [r["params_b"] for r in rows] == [1.0, 7.0, 2.7]
    assert all(r["max_abs_rel_err"] < 1e-3 for r in rows)  # one GPU made them all: any two find it


def test_a_fit_survives_json_and_a_bad_fit_file_is_named():
    text = json.dumps(fit_to_json(FITS["h100"]))
    assert fit_from_json(text, "f.json") == FITS["h100"]
    for bad, message in (("{", "not JSON"), ("[]", "not a GPU fit"), ('{"kind": "prefix-lab gpu fit"}', "missing"),
                         (text.replace('"blend": 2', '"blend": 3'), "its blend one of 1, 2, 4, 8"),
                         (text.replace('"mlp_act"', '"softmax"'), "lacks elementwise coefficients for mlp_act"),
                         (text.replace('"gemm_floor_s": ', '"gemm_floor_s": -'), "floor seconds, outside"),
                         (text.replace('[1024', '[100'), "increasing sequence lengths"),
                         (text.replace('"tile": 128', '"tile": "wide"'), "missing or bad field")):
        with pytest.raises(ProfileError, match=message):
            fit_from_json(bad, "f.json")


# -- the commands ---------------------------------------------------------------------------------------

def test_profile_check_prints_measured_against_predicted_and_json(files, capsys):
    assert main(["profile", "check", str(files[1]), "--gpu", "a100"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "n_embd 4096" in out[0] and "a100 fit" in out[0] and len(out) == len(TOKENS) + 3
    assert out[-1].startswith("one layer, attention aside: median error")
    assert main(["profile", "check", str(files[1]), "--gpu", "a100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"rows", "median_abs_rel_err", "max_abs_rel_err"} <= set(data)
    assert data["rows"][0] == check(FITS["a100"], read_profile(files[1]))["rows"][0]


def test_profile_fit_writes_a_fit_that_profile_check_reads(files, tmp_path, capsys):
    out = tmp_path / "mine.json"
    assert main(["profile", "fit", *map(str, files), "--gpu", "x100", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"wrote {out}" in said and "tiles of 128 rows" in said
    fit = fit_from_json(out.read_text(), str(out))
    assert fit.name == "x100" and fit.gemm_flops_per_s == pytest.approx(TRUE.gemm_flops_per_s, rel=1e-4)
    # an unpublished GPU takes the nearer published attention speeds, scaled by its matmuls' speed
    assert fit.attention[0][1] == pytest.approx(99e12 * fit.gemm_flops_per_s / FITS["a100"].gemm_flops_per_s, rel=1e-5)
    assert main(["profile", "check", str(files[0]), "--gpu", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["max_abs_rel_err"] < 1e-3
    assert main(["profile", "fit", str(files[0]), "--gpu", "x100"]) == 0  # no --out: the JSON itself
    assert json.loads(capsys.readouterr().out)["kind"] == "prefix-lab gpu fit"


@pytest.mark.parametrize("argv, message", [
    (["profile", "check", "nowhere.csv", "--gpu", "a100"], "cannot read profile nowhere.csv"),
    (["profile", "check", "{csv}", "--gpu", "b200"], "--gpu b200: no such GPU; use a100 or h100"),
    (["profile", "check", "{csv}", "--gpu", "nowhere.json"], "cannot read GPU fit nowhere.json"),
    (["profile", "check", "{csv}", "--gpu", "{csv}.json"], "not a GPU fit"),
    (["profile", "check", "{foreign}", "--gpu", "h100"], "not a Vidur MLP profile"),
    (["profile", "check", "{binary}", "--gpu", "h100"], "not UTF-8 text"),
    (["profile", "fit", "{csv}", "--gpu", "my gpu"], "name the GPU with letters"),
    (["profile", "fit", "{csv}", "--gpu", "x", "--out", "/nonexistent/dir/f.json"], "cannot write"),
    (["profile", "check", "{csv}"], "the following arguments are required: --gpu"),
    (["profile"], "the following arguments are required"),
])
def test_bad_profile_input_is_one_line_and_status_2(tmp_path, capsys, argv, message):
    csv_path = write_profile(tmp_path / "p.csv", SMALL, tokens=(1, 2))
    (tmp_path / "p.csv.json").write_text('{"kind": "something else"}')
    (tmp_path / "foreign.csv").write_text("name,value\nx,1\n")
    (tmp_path / "binary.csv").write_bytes(b"\xff\xfe\x00garbage")
    names = {"csv": str(csv_path), "foreign": str(tmp_path / "foreign.csv"), "binary": str(tmp_path / "binary.csv")}
    assert main([a.format(**names) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


# -- the shared profiles: the fit committed, and each model left out ------------------------------------

SHARED = shared_profiles()
needs_shared = pytest.mark.skipif(not SHARED, reason="no shared Vidur profiles (../shared/profiles/vidur, or "
                                                     "PREFIX_LAB_PROFILES)")


@needs_shared
def test_the_committed_fits_are_what_the_shared_profiles_give():
    for gpu, paths in SHARED.items():
        fit = fit_gpu([read_profile(p) for p in paths], gpu, FLASH_ATTENTION_2[gpu], FITS[gpu].source)
        assert fit == FITS[gpu], f"model/gpus/gpufits.py is behind the profiles: run bench/gpu_fit.py --write ({gpu})"


@needs_shared
def test_each_shared_model_left_out_of_the_fit_is_still_predicted_within_the_bounds():
    for gpu, paths in SHARED.items():
        for row in leave_one_out([read_profile(p) for p in paths], gpu, FLASH_ATTENTION_2[gpu]):
            assert row["median_abs_rel_err"] <= 0.10, row
            if row["params_b"] is not None and row["params_b"] >= 7:
                assert row["max_abs_rel_err"] <= 0.25, row


# -- what the page draws ------------------------------------------------------------------------------

def test_the_wheel_carries_the_measured_points_as_plain_data(tmp_path):
    from lab.page.figures.measured import read_points
    from lab.site.build import _write_wheel

    name = _write_wheel(tmp_path)
    with zipfile.ZipFile(tmp_path / name.split("/", 1)[1]) as zf:
        text = zf.read("lab/page/figures/_measured_points.py").decode()
        assert not any(n.endswith(".csv") for n in zf.namelist())
    space: dict = {}
    exec(compile(text, "_measured_points.py", "exec"), space)  # noqa: S102 -- the module the build wrote
    assert space["POINTS"] == read_points()
    if SHARED:
        llama = space["POINTS"]["llama8b_a100"]
        assert llama["file"] == "a100_meta-llama_Meta-Llama-3-8B_mlp.csv" and llama["tokens"][0] == 1
        assert len(llama["tokens"]) == len(llama["layer_ms"]) == len(llama["emb_ms"]) < 40  # a few points, not the file
