"""The wire capture beside Kamiński et al. 2023, Table 7 (bytes per operation,
counted with Wireshark): the study's figures, kept as data in studies/kaminski2023/published.json,
against the lab's (results/capture/wire.json). Here, above the capture
instrument: capture/ writes the lab's own figures and reads no study."""

from __future__ import annotations

from typing import Any

from capture.report import by_protocol
from studies.kaminski2023 import STUDY
from studies.published import study_bytes as published_bytes

# Table 7 of the study, bytes, from the published figures kept as data.
STUDY_TABLE_7 = published_bytes(STUDY.published())
STUDY_OPERATION = {"fetch-one": "Fetching element", "insert": "Inserting element"}


def comparison(results: dict[str, Any]) -> dict[str, Any]:
    """The study's Table 7 beside the lab's figures, and whether the rankings agree."""
    impl_of = by_protocol(results)
    out: dict[str, Any] = {}
    for op, study in STUDY_TABLE_7.items():
        rows = {}
        for protocol, study_bytes in study.items():
            name = impl_of.get(protocol)
            if name is None:
                continue
            new = results["new_connection"][name][op]["total"]["total"]["frame_bytes"]
            db = results["database"][name][op]["new_connection"]["total"]["frame_bytes"]
            steady = results["steady"][name][op]["total"]["frame_bytes"]
            rows[protocol] = {"implementation": name, "study": study_bytes,
                              "new_connection": new, "new_connection_with_db": new + db,
                              "steady": steady, "study_over_lab": study_bytes / new}
        ranks = {}
        for column in ("study", "new_connection", "new_connection_with_db", "steady"):
            ranks[column] = sorted(rows, key=lambda p, c=column: (rows[p][c], p))
        out[op] = {"rows": rows, "ranking": ranks,
                   "agrees": {c: ranks[c] == ranks["study"] for c in ranks if c != "study"}}
    return out


def why_they_differ(results: dict[str, Any], comp: dict[str, Any]) -> str:
    """One sentence, from the numbers, on why the study's bytes differ from the lab's."""
    rec = results["context"]["records"]
    diff = {op: [r["study"] - r["new_connection"] for r in c["rows"].values()]
            for op, c in comp.items()}
    if not all(diff.values()):
        return ""
    records = (f"this dataset's ~{rec['dataset_median_json']:,} B records (median JSON; the "
               f"fetched game {rec['fetched_game_json']:,} B, the inserted "
               f"{rec['inserted_game_json']:,} B)")
    if all(d > 0 for ds in diff.values() for d in ds):
        return (f"The study's figures exceed the lab's new-connection totals by "
                f"{min(min(d) for d in diff.values()):,.0f}–{max(max(d) for d in diff.values()):,.0f} B, "
                f"most likely because its records (Kaggle's \"80000 Steam games\" dataset) "
                f"were larger than {records}.")
    rest_insert = next(iter(comp["insert"]["rows"].values()))["implementation"]
    echo = results["new_connection"][rest_insert]["insert"]["total"]["to_client"]["app_payload"]
    fetch, insert = diff["fetch-one"], diff["insert"]
    return (f"The study's fetch figures exceed the lab's new-connection totals by "
            f"{min(fetch):,.0f}–{max(fetch):,.0f} B, likely because its records (Kaggle's \"80000 "
            f"Steam games\" dataset) were larger than {records}, while its insert figures are "
            f"{'below' if max(insert) < 0 else 'within'} the lab's ({min(insert):+,.0f} to "
            f"{max(insert):+,.0f} B) because every lab insert also answers with the whole created "
            f"game ({echo:,.0f} B of JSON back), which the study's insert apparently did not; "
            f"the study does not say whether setup, teardown or database packets were counted.")
