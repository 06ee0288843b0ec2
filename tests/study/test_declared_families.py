"""Holm families declared with the claims (``family:`` per claim, ``families:`` over their labels): the
verdict's Holm p within the declared family and the study-wide Holm p beside it, by hand; a singleton and
the default family said so; families: validated with their YAML paths; families added to a sweep after its
start are used and said to be post hoc."""

from __future__ import annotations

import pytest
import yaml

from asyncfl.cli.study import sweep_claims
from asyncfl.config import ConfigError
from asyncfl.study import build_study
from asyncfl.study.claim_tests import claim_markdown, claim_rows
from asyncfl.study.claims import DECLARED_FILE, declared_families, record_claims, study_claims
from tests.study.test_claims import study_raw

# versus z at 0.5 on every seed; a is 0.5 + 1..6 points on 6 seeds, c and d 0.5 + 1..5 points on 5 seeds:
# every difference positive, so only the unflipped pattern reaches the sum: p = 1/64 for a, 1/32 for c, d
TABLE = {
    "z": {"final accuracy": dict.fromkeys(range(6), 0.5)},
    "a": {"final accuracy": {s: 0.5 + 0.01 * (s + 1) for s in range(6)}},
    "c": {"final accuracy": {s: 0.5 + 0.01 * (s + 1) for s in range(5)}},
    "d": {"final accuracy": {s: 0.5 + 0.01 * (s + 1) for s in range(5)}},
}
RAW = {"compare": [{"name": n} for n in "zacd"], "targets": [0.9]}


def claims_of(labels=("fig2", "fig2_sqrt", "table3")) -> list[dict]:
    out = [{"variant": v, "versus": "z", "measure": "final_accuracy", "direction": "higher"} for v in "acd"]
    return [{**c, "family": label} if label else c for c, label in zip(out, labels)]


def rows_of(claims: list[dict], families=None) -> list[dict]:
    raw = {**RAW, "claims": claims} if families is None else {**RAW, "claims": claims, "families": families}
    return claim_rows(study_claims(raw, "study.yaml"), TABLE)


def test_families_merge_claim_labels_and_holm_runs_per_family_and_over_the_study_by_hand():
    """figure_2 holds a (1/64) and c (1/32): sorted 1/64 x 2 = 1/32, then 1/32 x 1 -> both 0.03125,
    supported.  table3 holds d alone: 1/32 uncorrected, supported, a singleton.  Over the study's three:
    1/64 x 3 = 0.046875 (supported), then 1/32 x 2 = 0.0625 for c and d (inconclusive)."""
    rows = rows_of(claims_of(), {"figure_2": ["fig2", "fig2_sqrt"]})
    assert [r["family"] for r in rows] == ["figure_2", "figure_2", "table3"]
    assert [r["group"] for r in rows] == ["fig2", "fig2_sqrt", ""]
    assert [r["p_sign_flip"] for r in rows] == [1 / 64, 1 / 32, 1 / 32]
    assert [r["p_holm"] for r in rows] == pytest.approx([0.03125, 0.03125, 0.03125])
    assert [r["verdict"] for r in rows] == ["supported"] * 3
    assert [r["p_holm_study"] for r in rows] == pytest.approx([0.046875, 0.0625, 0.0625])
    assert [r["verdict_study"] for r in rows] == ["supported", "inconclusive", "inconclusive"]
    assert [r["p_holm_study_other_side"] for r in rows] == [1.0, 1.0, 1.0]  # no pattern sum is below it
    assert [r["family_declared"] for r in rows] == ["declared", "declared", "declared singleton"]
    cells = claim_markdown(rows)
    assert [c["family (tests)"] for c in cells] == [
        "figure_2 (2); fig2", "figure_2 (2); fig2_sqrt", "table3 (1, singleton: uncorrected)"
    ]  # fmt: skip
    assert cells[2]["verdict"] == "supported" and cells[2]["verdict, study-wide Holm"] == "inconclusive"
    assert cells[2]["study-wide Holm p (other side)"] == "0.0625 (1.0000)"


def test_claims_naming_no_family_share_the_study_and_the_two_holm_columns_agree():
    rows = rows_of(claims_of(labels=(None, None, None)))
    assert {r["family"] for r in rows} == {"study"} and {r["family_declared"] for r in rows} == {"default"}
    assert [r["p_holm"] for r in rows] == [r["p_holm_study"] for r in rows] == pytest.approx([0.046875, 0.0625, 0.0625])
    assert claim_markdown(rows)[0]["family (tests)"] == "study (3, default: the study)"


def test_families_section_is_validated_with_its_yaml_path_and_the_allowed_labels(tmp_path):
    claims = [
        {"family": "fig2", "variant": "fast", "versus": "slow", "measure": "final_accuracy", "direction": "higher"},
        {"family": "table3", "variant": "fast", "versus": "slow", "measure": "best_accuracy", "direction": "higher"},
    ]  # fmt: skip
    bad = {"figure_2": ["fig2", "fig_2"], "again": ["fig2"], "table3": ["fig2"], "empty": []}
    with pytest.raises(ConfigError) as err:
        build_study(study_raw(tmp_path, claims=claims, families=bad))
    text = str(err.value)
    assert "families.figure_2[1]: 'fig_2' is no claim's family: label; allowed: fig2, table3." in text
    assert "families.again[0]: 'fig2' is already in families.figure_2; a claim is in one family." in text
    assert "families.table3: 'table3' is also a claim's family: label; list it here" in text
    assert "families.empty: expected a non-empty list of claims' family: labels (fig2, table3); got []." in text
    with pytest.raises(ConfigError, match=r"families: expected a mapping family name -> list of claims' family:"):
        build_study(study_raw(tmp_path, claims=claims, families=["fig2"]))
    study = build_study(study_raw(tmp_path, claims=claims, families={"paper": ["fig2", "table3"]}))
    assert [(c.family, c.group) for c in study.claims] == [("paper", "fig2"), ("paper", "table3")]


def test_a_sweep_records_its_families_and_families_added_after_its_start_are_said_to_be_post_hoc(tmp_path):
    claims = claims_of()
    for name in ("plain", "with", "old"):
        (tmp_path / name).mkdir()
    record_claims(tmp_path / "plain", claims)
    assert "families" not in yaml.safe_load((tmp_path / "plain" / DECLARED_FILE).read_text())  # as before
    record_claims(tmp_path / "with", claims, {"figure_2": ["fig2", "fig2_sqrt"]})
    assert declared_families(tmp_path / "with", {"families": {"other": ["fig2"]}}) == (
        {"figure_2": ["fig2", "fig2_sqrt"]},
        f"the families: in study.yaml differ from those this sweep was run with ({DECLARED_FILE}); the recorded "
        "ones are used.",
    )
    later = {**RAW, "claims": claims, "families": {"figure_2": ["fig2", "fig2_sqrt"]}}
    tested, note = sweep_claims(tmp_path / "plain", later)
    assert [c.family for c in tested] == ["figure_2", "figure_2", "table3"]
    assert note.startswith("the families: were declared after this sweep started (in study.yaml, not in ")
    # a sweep from before the record: its study.yaml, nothing to compare with
    assert sweep_claims(tmp_path / "old", later)[1] == ""


def test_a_published_archive_of_a_study_that_only_gained_families_is_tabled_with_them(tmp_path):
    """reproduce_papers --tables-only: runs archived before a study file declared families: are still its runs
    (claims unchanged), read with the families as a resumed sweep would (study.yaml gains them, the record
    does not, so the report says they came after the runs); any other change still refuses the archive."""
    import tarfile

    from tests.study.test_report import _reproduce_papers

    rp = _reproduce_papers()
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    raw = {**RAW, "claims": claims_of()}
    (sweep / "study.yaml").write_text(yaml.safe_dump(raw))
    record_claims(sweep, raw["claims"])
    with tarfile.open(tmp_path / "runs.tar.xz", "w:xz") as tar:
        for name in ("study.yaml", DECLARED_FILE):
            tar.add(sweep / name, arcname=name)
    families = {"figure_2": ["fig2", "fig2_sqrt"]}
    into = rp.unpacked(tmp_path / "runs.tar.xz", {**raw, "families": families}, tmp_path, "s")
    assert into is not None and yaml.safe_load((into / "study.yaml").read_text())["families"] == families
    assert sweep_claims(into, yaml.safe_load((into / "study.yaml").read_text()))[1].startswith(
        "the families: were declared after this sweep started"
    )
    assert rp.unpacked(tmp_path / "runs.tar.xz", {**raw, "families": families, "seeds": [1]}, tmp_path, "s") is None
