"""``/metrics`` stays small whatever clients send: made-up HTTP methods and paths do not
become label values, and the per-run multiprocess directory is removed when serve ends."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from .conftest import start_server


@pytest.mark.parametrize("workers", [1, 2])
def test_made_up_methods_and_paths_do_not_grow_metrics(tmp_path: Path, workers: int) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    served = start_server(tmp_path, workers=workers, extra_env={"TMPDIR": str(tmp)},
                          config={"limits": {"requests_per_second": 0}})
    try:
        with httpx.Client(base_url=served.url, timeout=10) as http:
            baseline = len(http.get("/metrics").content)
            for i in range(150):  # keyless, each a new method and a new path
                http.request(f"X{i:04d}MADEUP", f"/v1/sessions/s{i}/messages")
                http.get(f"/no/such/path/{i}")
            text = http.get("/metrics").text
        assert "MADEUP" not in text and "/no/such" not in text and "/s1/" not in text
        counted = sum(float(v) for v in re.findall(
            r'contextfold_http_requests_total\{method="other",route="[^"]+",status="\d+"\} (\S+)',
            text))
        assert counted == 150
        assert len(text) < baseline + 20_000  # a few new series, not one per request
        if workers > 1:
            assert [p.name for p in tmp.iterdir() if p.name.startswith("contextfold-metrics-")]
    finally:
        served.stop()
    leftover = [p.name for p in tmp.iterdir() if p.name.startswith("contextfold-metrics-")]
    assert leftover == []
