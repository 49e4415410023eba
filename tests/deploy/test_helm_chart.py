"""deploy/helm renders with Helm's own engine (helm-python-sdk: Helm v4's Go SDK as a C
library, no helm binary) and every manifest validates against the Kubernetes schemas
(kubernetes-validate, which ships them). Rendered as an operator would install it: bundled
PostgreSQL and Redis, and external ones behind an ingress."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

helm_chart = pytest.importorskip("helm_python.chart")
kubernetes_validate = pytest.importorskip("kubernetes_validate")

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm"
KUBE_VERSION = "1.30.0"
SECRETS = {"secrets": {"djangoSecretKey": "not-a-real-key", "postgresPassword": "not-a-real-password"}}
EXTERNAL = {
    "secrets": {"djangoSecretKey": "not-a-real-key"},
    "database": {"external": True, "url": "postgresql://deerflow:pw@db.internal:5432/deerflow"},
    "redis": {"external": True, "url": "redis://cache.internal:6379/0"},
    "ingress": {"enabled": True, "host": "deerflow.example.com", "tls": [{"hosts": ["deerflow.example.com"], "secretName": "tls"}]},
    "web": {"replicas": 3},
    "channels": {"enabled": True},
    "sandbox": {"use": "container", "dockerHost": "tcp://podman.internal:2375"},
}


def render(values: dict) -> list[dict]:
    manifests = helm_chart.Chart.load(str(CHART)).render(values, name="df", namespace="agents", is_install=True)
    return [doc for text in manifests.values() for doc in yaml.safe_load_all(text) if doc]


def by_kind(docs: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


@pytest.mark.parametrize("values", [SECRETS, EXTERNAL], ids=["bundled", "external"])
def test_every_manifest_is_valid_kubernetes(values):
    docs = render(values)
    assert len(docs) >= 8
    for doc in docs:
        kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)


def test_the_chart_lints_clean():
    report = helm_chart.lint(str(CHART), SECRETS, strict=True)
    assert report["errors"] == [] and not [m for m in report["messages"] if m["severity"] >= 2], report


def test_web_servers_are_probed_and_drained_as_the_server_expects():
    docs = render(SECRETS)
    web = by_kind(docs, "Deployment")["df-deerflow-web"]["spec"]
    pod = web["template"]["spec"]
    container = pod["containers"][0]
    assert web["replicas"] == 2 and web["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert container["readinessProbe"]["httpGet"]["path"] == "/api/health/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/api/health/live"
    env = {e["name"]: e for e in container["env"]}
    # Kubernetes must wait longer than the server's own grace before it kills the pod.
    assert pod["terminationGracePeriodSeconds"] > int(env["SHUTDOWN_GRACE_SECONDS"]["value"])
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] != 0
    assert env["RUN_EXECUTOR"]["value"] == "celery"
    assert env["DJANGO_SECRET_KEY"]["valueFrom"]["secretKeyRef"]["key"] == "DJANGO_SECRET_KEY"
    # Migrations run before an upgrade's pods start.
    job = by_kind(docs, "Job")
    assert len(job) == 1 and "pre-upgrade" in next(iter(job.values()))["metadata"]["annotations"]["helm.sh/hook"]


def test_bundled_datastores_or_external_urls():
    bundled = render(SECRETS)
    assert set(by_kind(bundled, "StatefulSet")) == {"df-deerflow-postgres", "df-deerflow-redis"}
    secret = by_kind(bundled, "Secret")["df-deerflow"]["stringData"]
    assert secret["DATABASE_URL"] == "postgresql://deerflow:not-a-real-password@df-deerflow-postgres:5432/deerflow"
    assert secret["REDIS_URL"] == "redis://df-deerflow-redis:6379/0"

    external = render(EXTERNAL)
    assert by_kind(external, "StatefulSet") == {}
    secret = by_kind(external, "Secret")["df-deerflow"]["stringData"]
    assert secret["DATABASE_URL"] == EXTERNAL["database"]["url"] and secret["REDIS_URL"] == EXTERNAL["redis"]["url"]
    deployments = by_kind(external, "Deployment")
    assert deployments["df-deerflow-web"]["spec"]["replicas"] == 3
    assert set(deployments) == {"df-deerflow-web", "df-deerflow-worker", "df-deerflow-beat", "df-deerflow-channels"}
    assert deployments["df-deerflow-beat"]["spec"]["strategy"]["type"] == "Recreate"


def test_ingress_keeps_streams_open_and_the_sandbox_is_configured():
    docs = render(EXTERNAL)
    ingress = by_kind(docs, "Ingress")["df-deerflow"]
    annotations = ingress["metadata"]["annotations"]
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    assert annotations["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
    assert ingress["spec"]["tls"][0]["hosts"] == ["deerflow.example.com"]
    config = yaml.safe_load(by_kind(docs, "ConfigMap")["df-deerflow-config"]["data"]["config.yaml"])
    assert config["sandbox"] == {"use": "container"}
    env = {e["name"]: e.get("value") for e in by_kind(docs, "Deployment")["df-deerflow-worker"]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["DOCKER_HOST"] == "tcp://podman.internal:2375"


def test_missing_secrets_are_refused_by_name():
    with pytest.raises(Exception, match="secrets.djangoSecretKey is required"):
        render({"secrets": {"postgresPassword": "x"}})
