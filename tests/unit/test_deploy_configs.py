"""Deployment files: alert rules (promtool), the Grafana dashboard and provisioning, the compose file.

promtool and docker-compose come from the Debian packages ``prometheus`` and
``docker-compose`` (CI installs them: .ci/run); a missing one fails with how to get it.
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from stream.metrics import PipelineMetrics, metric_names

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "docker" / "prometheus" / "rules.yml"
DASHBOARD = ROOT / "grafana" / "dashboards" / "halluwatch.json"
# Series Prometheus itself provides, and the rules' own recorded series.
PROMETHEUS_SERIES = {"up"}


def tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: apt-get install {package} (CI does this in .ci/run)")
    return path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)


def exported() -> set[str]:
    return metric_names(PipelineMetrics(CollectorRegistry()).registry)


def series_in(expr: str) -> set[str]:
    """Metric names an expression selects (recording-rule names contain colons)."""
    names = set(re.findall(r"\b(halluwatch[a-z_:]*|up)\b(?=\s*[{\[)]|\s*(?:>|<|==|$|\s+(?:and|or|unless|offset)))", expr))
    return {n for n in names if n != "halluwatch"}


def test_promtool_check_rules() -> None:
    result = run(tool("promtool", "prometheus"), "check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_rule_unit_tests() -> None:
    result = run(tool("promtool", "prometheus"), "test", "rules", str(RULES.with_name("rules.test.yml")))
    assert result.returncode == 0, result.stdout + result.stderr


def test_prometheus_config_is_valid() -> None:
    config = ROOT / "docker" / "prometheus" / "prometheus.yml"
    # The container path of the rules differs; check a copy that points at the file here.
    text = config.read_text().replace("/etc/prometheus/rules.yml", str(RULES))
    tmp = ROOT / "docker" / "prometheus" / ".check-prometheus.yml"
    tmp.write_text(text)
    try:
        result = run(tool("promtool", "prometheus"), "check", "config", str(tmp))
    finally:
        tmp.unlink()
    assert result.returncode == 0, result.stdout + result.stderr


def test_rules_only_use_series_the_worker_exports() -> None:
    rules = yaml.safe_load(RULES.read_text())
    recorded = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    known = exported() | recorded | PROMETHEUS_SERIES
    used = set()
    for group in rules["groups"]:
        for rule in group["rules"]:
            used |= series_in(rule["expr"])
    assert used, "no series found in the rules: the parser is broken"
    assert used <= known, f"rules use unknown series: {sorted(used - known)}"
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    assert {"HalluwatchHallucinationRateSpike", "HalluwatchEndToEndLatencyHigh", "HalluwatchDeadLetters",
            "HalluwatchConsumerLagGrowing", "HalluwatchWorkerDown"} <= alerts


def test_dashboard_panels_query_exported_series() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "halluwatch"
    titles = [p["title"] for p in dashboard["panels"]]
    for wanted in ("Hallucination rate over time", "Alerts by severity", "Stage latency p50 / p95",
                   "End-to-end latency (turn timestamp to output)", "Throughput", "Model tokens per second",
                   "Abstention rate", "Dead letters", "Consumer lag"):
        assert wanted in titles
    known = exported() | PROMETHEUS_SERIES
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "prometheus"
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            used = series_in(target["expr"])
            assert used, f"{panel['title']}: no series in {target['expr']!r}"
            assert used <= known, f"{panel['title']}: unknown series {sorted(used - known)}"


def test_provisioning_points_at_the_dashboard_and_datasource() -> None:
    datasource = yaml.safe_load((ROOT / "grafana/provisioning/datasources/prometheus.yaml").read_text())
    assert datasource["datasources"][0]["uid"] == "prometheus"
    provider = yaml.safe_load((ROOT / "grafana/provisioning/dashboards/halluwatch.yaml").read_text())
    compose = yaml.safe_load((ROOT / "docker/compose.yaml").read_text())
    mounts = compose["services"]["grafana"]["volumes"]
    dashboards_dir = provider["providers"][0]["options"]["path"]
    assert f"../grafana/dashboards:{dashboards_dir}:ro" in mounts


def test_compose_file_validates() -> None:
    compose = tool("docker-compose", "docker-compose")
    for files in (["docker/compose.yaml"], ["docker/compose.yaml", "docker/compose.gpu.yaml"]):
        args = [a for f in files for a in ("-f", f)]
        result = run(compose, *args, "config")
        assert result.returncode == 0, result.stderr
        services = yaml.safe_load(result.stdout)["services"]
        assert {"kafka", "worker-1", "worker-2", "prometheus", "grafana"} <= set(services)
    assert services["worker-1"]["environment"]["HALLUWATCH_N_GPU_LAYERS"] == "99"
    kafka = services["kafka"]["environment"]
    assert kafka["KAFKA_PROCESS_ROLES"] == "broker,controller"  # KRaft, no ZooKeeper
    # Both workers share one consumer group (named after the topic prefix) and are both scraped.
    envs = [services[w]["environment"] for w in ("worker-1", "worker-2")]
    assert envs[0]["HALLUWATCH_TOPIC_PREFIX"] == envs[1]["HALLUWATCH_TOPIC_PREFIX"]
    scrape = yaml.safe_load((ROOT / "docker/prometheus/prometheus.yml").read_text())
    assert scrape["scrape_configs"][0]["static_configs"][0]["targets"] == ["worker-1:9464", "worker-2:9464"]
