"""Loads an `arbor export --aiperf DIR` with AIPerf's own models.

Run with the Python of a venv that has aiperf==0.13.0 (scripts/aiperf-check.sh
makes one):

    python scripts/aiperf/check.py DIR

Checks, failing (exit 1) on the first problem:
- DIR/profile_export_aiperf.json validates as AIPerf's `JsonExportData`,
  and every metric block in it as `JsonMetricResult`;
- the fields arbor writes arrived typed (AIPerf's model did not drop them
  into its extras): the headline metric blocks, `was_cancelled`,
  `is_complete`, `error_summary`;
- with a scenario, `metadata` carries `scenario`, `submission_valid` and,
  when invalid, `submission_invalid_reasons`, as AIPerf writes it;
- every line of DIR/profile_export.jsonl validates as `MetricRecordInfo`;
- `aiperf plot`'s loader (`DataLoader.load_run`) reads DIR and sees the
  per-request columns its single-run plots draw.

When DIR holds `profile_export_aiperf_aggregate.json` (the export of an
`arbor run --repeat` directory), it is checked instead with AIPerf's
aggregate model: the document as `JsonExportData`, every metric as
AIPerf's `ConfidenceMetric`, the `metadata` keys AIPerf's confidence
exporter writes, and `aiperf plot`'s loader reading it as an aggregate
cell; then each DIR/run-k/ as above.
Prints one line per check.
"""

import sys
from pathlib import Path

import aiperf
from aiperf.common.models.export_models import JsonExportData, JsonMetricResult
from aiperf.common.models.record_models import MetricRecordInfo
from aiperf.orchestrator.aggregation.confidence import ConfidenceMetric
from aiperf.plot.core.data_loader import DataLoader

HEADLINE = [
    "time_to_first_token",
    "time_to_second_token",
    "inter_token_latency",
    "request_latency",
    "output_token_throughput",
    "output_token_throughput_per_user",
    "request_throughput",
    "request_count",
    "output_sequence_length",
    "input_sequence_length",
    "benchmark_duration",
]
DISTRIBUTION_STATS = ["avg", "min", "max", "p50", "p90", "p99", "std", "count"]
UNITS = {
    "time_to_first_token": "ms",
    "time_to_second_token": "ms",
    "inter_token_latency": "ms",
    "request_latency": "ms",
    "output_token_throughput": "tokens/sec",
    "output_token_throughput_per_user": "tokens/sec/user",
    "request_throughput": "requests/sec",
    "request_count": "requests",
    "benchmark_duration": "sec",
}
# Per-request columns `aiperf plot`'s single-run plots read.
PLOT_COLUMNS = ["request_start_ns", "request_end_ns", "time_to_first_token", "request_latency"]


def fail(message):
    print(f"aiperf-check: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def check_profile(path):
    data = JsonExportData.model_validate_json(path.read_bytes())
    print(f"ok   {path.name} validates as JsonExportData (aiperf {aiperf.__version__})")
    raw = data.model_dump()
    blocks = JsonMetricResult.project_summary_dict(raw)
    for tag in HEADLINE:
        block = getattr(data, tag, None) or blocks.get(tag)
        if block is None:
            fail(f"{path.name}: no `{tag}` block")
        if tag in UNITS and block.unit != UNITS[tag]:
            fail(f"{path.name}: `{tag}` in {block.unit!r}, AIPerf writes {UNITS[tag]!r}")
        if block.avg is None:
            fail(f"{path.name}: `{tag}` has no avg")
    for tag in ["time_to_first_token", "inter_token_latency", "request_latency"]:
        block = getattr(data, tag)
        missing = [s for s in DISTRIBUTION_STATS if getattr(block, s) is None]
        if missing:
            fail(f"{path.name}: `{tag}` lacks {missing}")
    print(f"ok   {len(blocks)} metric blocks validate as JsonMetricResult, units as AIPerf's")
    for field in ["was_cancelled", "is_complete", "error_summary"]:
        if getattr(data, field) is None:
            fail(f"{path.name}: `{field}` did not arrive")
    extra = data.model_extra or {}
    if "arbor" not in extra:
        fail(f"{path.name}: no `arbor` extension")
    scenario = (extra.get("arbor") or {}).get("scenario")
    metadata = extra.get("metadata")
    if scenario is not None:
        if not isinstance(metadata, dict):
            fail(f"{path.name}: a scenario run without a `metadata` block")
        if not isinstance(metadata.get("scenario"), str):
            fail(f"{path.name}: metadata.scenario is not a name")
        if not isinstance(metadata.get("submission_valid"), bool):
            fail(f"{path.name}: metadata.submission_valid is not a bool")
        reasons = metadata.get("submission_invalid_reasons")
        if metadata["submission_valid"] and reasons:
            fail(f"{path.name}: valid with reasons {reasons}")
        if not metadata["submission_valid"] and not reasons:
            fail(f"{path.name}: invalid without reasons")
        print(
            f"ok   metadata: scenario {metadata['scenario']}, "
            f"submission_valid {metadata['submission_valid']}, "
            f"reasons {reasons or []}"
        )
    return data


def check_records(path):
    count = 0
    phases = {}
    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = MetricRecordInfo.model_validate_json(line)
            except Exception as e:  # the model's own error, with the line
                fail(f"{path.name} line {number}: {e}")
            phase = str(record.metadata.benchmark_phase)
            phases[phase] = phases.get(phase, 0) + 1
            count += 1
    if count == 0:
        fail(f"{path.name}: no records")
    print(f"ok   {count} lines of {path.name} validate as MetricRecordInfo {phases}")


def check_plot_loader(directory):
    run = DataLoader().load_run(directory)
    if run.requests is None or run.requests.empty:
        fail("aiperf plot's loader read no requests")
    missing = [c for c in PLOT_COLUMNS if c not in run.requests.columns]
    if missing:
        fail(f"aiperf plot's loader lacks columns {missing}")
    print(f"ok   aiperf plot's loader reads {len(run.requests)} requests and columns {PLOT_COLUMNS}")


AGGREGATE_METADATA = [
    "aggregation_type",
    "num_profile_runs",
    "num_successful_runs",
    "failed_runs",
]
AGGREGATE_HEADLINE = ["time_to_first_token_p50", "request_latency_p99", "request_throughput_avg"]


def check_aggregate(directory):
    path = directory / "profile_export_aiperf_aggregate.json"
    data = JsonExportData.model_validate_json(path.read_bytes())
    extra = data.model_extra or {}
    metadata, metrics = extra.get("metadata") or {}, extra.get("metrics") or {}
    missing = [k for k in AGGREGATE_METADATA if k not in metadata]
    if missing:
        fail(f"{path.name}: metadata lacks {missing}")
    if "scenario" in metadata and not isinstance(metadata.get("submission_valid"), bool):
        fail(f"{path.name}: a scenario without a submission_valid bool")
    if metadata.get("submission_valid") is False and not metadata.get("submission_invalid_reasons"):
        fail(f"{path.name}: invalid without reasons")
    for name, metric in metrics.items():
        try:
            ConfidenceMetric(**metric)
        except TypeError as e:
            fail(f"{path.name}: {name} is not a ConfidenceMetric: {e}")
    absent = [k for k in AGGREGATE_HEADLINE if k not in metrics]
    if absent:
        fail(f"{path.name}: no {absent}")
    print(
        f"ok   {path.name}: {len(metrics)} metrics as ConfidenceMetric; "
        f"{metadata['num_successful_runs']} of {metadata['num_profile_runs']} runs, "
        f"submission_valid {metadata.get('submission_valid')} "
        f"{metadata.get('submission_invalid_reasons', [])}"
    )
    run = DataLoader().load_run(directory)
    if "time_to_first_token" not in run.aggregated:
        fail("aiperf plot's loader did not read the aggregate's metrics")
    print("ok   aiperf plot's loader reads it as an aggregate cell")
    runs = sorted(p for p in directory.glob("run-*") if p.is_dir())
    if not runs:
        fail(f"{directory}: no run-k directories")
    for run_dir in runs:
        check_run(run_dir)


def check_run(directory):
    check_profile(directory / "profile_export_aiperf.json")
    check_records(directory / "profile_export.jsonl")
    check_plot_loader(directory)


def main():
    if len(sys.argv) != 2:
        fail("usage: check.py DIR (an `arbor export --aiperf DIR`)")
    directory = Path(sys.argv[1])
    if (directory / "profile_export_aiperf_aggregate.json").exists():
        check_aggregate(directory)
    else:
        check_run(directory)


if __name__ == "__main__":
    main()
