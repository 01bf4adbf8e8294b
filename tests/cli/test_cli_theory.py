"""``oltr theory``: the printed tables, verdicts and witnesses."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from oltr.cli import app

runner = CliRunner()

# CT15 Tables 1 and 2 (m = 3), typed from the paper.
TABLE1 = {
    "123": "0 3 2 5 1 4 3 6",
    "132": "0 2 3 5 1 3 4 6",
    "213": "0 3 1 4 2 5 3 6",
    "231": "0 1 3 4 2 3 5 6",
    "312": "0 2 1 3 3 5 4 6",
    "321": "0 1 2 3 3 4 5 6",
}
TABLE2 = {
    "123": "0 0 0 0 1 1 1 1",
    "132": "0 0 0 0 1 1 1 1",
    "213": "0 0 1 1 0 0 1 1",
    "231": "0 1 0 1 0 1 0 1",
    "312": "0 0 1 1 0 0 1 1",
    "321": "0 1 0 1 0 1 0 1",
}


def test_matrices_prints_tables_1_and_2() -> None:
    res = runner.invoke(app, ["theory", "matrices", "--measure", "sumloss", "--m", "3"])
    assert res.exit_code == 0, res.output
    lines = [ln.split() for ln in res.output.splitlines() if ln.startswith("σ")]
    header = [ln for ln in lines if ln[0] == "σ"]
    cols = ["000", "001", "010", "011", "100", "101", "110", "111"]
    assert header and all(h[3:] == cols for h in header)
    rows = [ln for ln in lines if ln[0] != "σ"]
    assert len(rows) == 12
    for i, ln in enumerate(rows):
        label = ln[0].split("=")[1]
        assert ln[0] == f"σ{i % 6 + 1}={label}"
        assert " ".join(ln[1:]) == (TABLE1 if i < 6 else TABLE2)[label]


def test_matrices_json_exact_fractions() -> None:
    res = runner.invoke(app, ["theory", "matrices", "--measure", "map", "--m", "3", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["kind"] == "gain"
    # CT15 §15: MAP row of σ1 = 123.
    assert data["L"][0] == ["1", "1/3", "1/2", "7/12", "1", "5/6", "1", "1"]
    assert [" ".join(r) for r in data["H"]] == list(TABLE2.values())


def test_observability_dcg_json() -> None:
    res = runner.invoke(app, ["theory", "observability", "--measure", "dcg", "--m", "3", "--json"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert rep["global"]["holds"] and not rep["local"]["holds"]
    assert rep["n_pareto"] == 6 and len(rep["neighbours"]) == 6
    w = rep["local"]["witness"]
    # Failing pairs keep the same item on top (rank "1" at the same place of the rank vector).
    assert w["actions"][0].index("1") == w["actions"][1].index("1")
    assert sorted(w["observers"]) == sorted(w["actions"])


def test_observability_text_ndcg() -> None:
    res = runner.invoke(app, ["theory", "observability", "--measure", "ndcg", "--m", "3"])
    assert res.exit_code == 0, res.output
    glob = next(ln for ln in res.output.splitlines() if ln.startswith("global observability (CT15"))
    assert "FAILS" in glob
    assert "witness:" in res.output


def test_witness_ct16_json() -> None:
    res = runner.invoke(
        app, ["theory", "witness", "--measure", "ndcg", "--m", "3", "--ct16", "--json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    t1 = out["ct16_table1"]
    assert [round(x, 4) for x in t1["expected_G_over_Z_p"]] == [0.3533, 0.3920, 0.3226]
    assert [round(x, 4) for x in t1["expected_G_over_Z_q"]] == [0.3339, 0.3339, 0.4]
    assert t1["optimal_orders_p"] == ["213"] and t1["is_witness"]
    assert out["found"]["is_witness"]


def test_witness_none_for_sumloss() -> None:
    res = runner.invoke(app, ["theory", "witness", "--measure", "sumloss", "--m", "3"])
    assert res.exit_code == 0, res.output
    assert "global observability holds" in res.output


def test_bad_input_exits_2() -> None:
    res = runner.invoke(app, ["theory", "matrices", "--measure", "nope", "--m", "3"])
    assert res.exit_code == 2
    assert "unknown measure" in res.output
    res = runner.invoke(app, ["theory", "observability", "--m", "0"])
    assert res.exit_code == 2 and "n_items" in res.output


def test_huge_matrices_are_refused_before_computing_them() -> None:
    res = runner.invoke(app, ["theory", "matrices", "--m", "8"])
    assert res.exit_code == 2
    assert "40,320 x 256 = 10,321,920 cells" in res.output and "--force" in res.output


def test_observability_reports_each_stage_in_order() -> None:
    from oltr.theory.matrices import ranking_game
    from oltr.theory.observability import ANALYSIS_STAGES, analyze_game

    seen: list[str] = []
    analyze_game(ranking_game("sumloss", 3), progress=seen.append)
    assert tuple(seen) == ANALYSIS_STAGES
