"""deploy/cluster/: the clustered shape for compose and Kubernetes, checked by structure
(no container engine runs here), as tests/ops/test_deploy.py checks deploy/; the
proxy's configuration is also parsed by a real nginx, and the manifests are rendered
by kustomize where ``kubectl`` is installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from service.broker.pubsub import parse_cluster_url
from service.cluster import proxy
from workers.rq_cluster import hash_tag

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CLUSTER = DEPLOY / "cluster"
K8S = CLUSTER / "k8s"
NGINX_DIR = DEPLOY / "nginx"
APP_SERVICES = ("migrate", "api", "worker")
HARDENING = ("read_only", "tmpfs", "security_opt", "cap_drop", "image")


def _compose(path: Path) -> dict[str, Any]:
    compose: dict[str, Any] = yaml.safe_load(path.read_text())
    return compose


def _as_compose_reads(value: str) -> str:
    """``${NAME:?message}`` replaced by a value, as compose does from deploy/.env."""
    return re.sub(r"\$\{(\w+):\?[^}]*\}", lambda m: f"value-of-{m.group(1).lower()}", value)


def _match_id_patterns() -> list[re.Pattern[str]]:
    """The map's regexes, as Python reads them (PCRE's (?<name>...) is (?P<name>...))."""
    text = (NGINX_DIR / "match-id.conf").read_text()
    return [
        re.compile(pattern.replace("(?<", "(?P<"))
        for pattern in re.findall(r"^\s+~(\S+)\s+\$\w+;", text, re.MULTILINE)
    ]


def _match_id(path: str) -> str | None:
    for pattern in _match_id_patterns():
        found = pattern.search(path)
        if found:
            return next(v for v in found.groupdict().values() if v)
    return None


@pytest.mark.parametrize(
    ("path", "match_id"),
    [
        ("/api/matches/m-1", "m-1"),
        ("/api/matches/m-1/play", "m-1"),
        ("/api/matches/m-1/events/stream", "m-1"),
        ("/api/matches/m-1/ws", "m-1"),
        ("/api/matches/m-1/replay/frames/3", "m-1"),
        ("/play/m-2", "m-2"),
        ("/watch/m-2", "m-2"),
        ("/replay/m-2", "m-2"),
        ("/api/lobby/ws", None),
        ("/api/players", None),
        ("/player/p-1", None),
        ("/tournaments/t-1", None),
        ("/", None),
    ],
)
def test_given_a_request_path_then_the_proxy_takes_the_match_id_the_routes_name(
    path: str, match_id: str | None
) -> None:
    assert len(_match_id_patterns()) == 2
    assert _match_id(path) == match_id


def test_given_the_cluster_compose_then_six_redis_nodes_make_a_cluster_and_a_standby_streams() -> (
    None
):
    services = _compose(CLUSTER / "compose.yaml")["services"]
    nodes = sorted(name for name in services if re.fullmatch(r"redis-\d", name))
    assert nodes == [f"redis-{n}" for n in range(1, 7)]
    for name in nodes:
        node = services[name]
        command = " ".join(node["command"])
        assert "--cluster-enabled yes" in command and "--appendonly yes" in command
        assert '--cluster-announce-hostname "$$(hostname)"' in command
        assert node["hostname"] == name and node["healthcheck"]["test"]
    create = services["redis-cluster-create"]
    script = " ".join(create["command"])
    assert "--cluster create" in script and "--cluster-replicas 1" in script
    assert all(f"{n}:6379" in script for n in nodes)
    assert set(create["depends_on"]) == set(nodes)
    assert all(d["condition"] == "service_healthy" for d in create["depends_on"].values())

    primary, standby = services["postgres-primary"], services["postgres-standby"]
    mounted = [v.split(":")[0] for v in primary["volumes"] + standby["volumes"] if ":" in v]
    for path in mounted:
        if path.startswith("."):
            assert (CLUSTER / path).exists(), path
    replication = (CLUSTER / "postgres" / "20-replication.sh").read_text()
    assert "REPLICATION LOGIN" in replication
    assert "pg_create_physical_replication_slot('matcha_standby')" in replication
    assert "host replication matcha_replication" in replication
    entry = (CLUSTER / "postgres" / "standby.sh").read_text()
    assert "pg_basebackup" in entry and "--write-recovery-conf" in entry
    assert "--slot=matcha_standby" in entry and "--host=postgres-primary" in entry
    assert "hot_standby=on" in entry and "cluster_name=matcha_standby" in entry
    assert "cluster_name=matcha_primary" in " ".join(primary["command"])
    assert standby["depends_on"]["postgres-primary"]["condition"] == "service_healthy"


def test_given_the_cluster_compose_then_apis_and_workers_use_the_cluster_and_the_standby() -> None:
    services = _compose(CLUSTER / "compose.yaml")["services"]
    for name in ("api", "worker"):
        env = services[name]["environment"]
        address = parse_cluster_url(_as_compose_reads(env["REDIS_URL"]))
        assert [host for host, _ in address.nodes] == [f"redis-{n}" for n in range(1, 7)]
        assert address.password, "the cluster's password, from deploy/.env"
        assert hash_tag(env["RQ_KEY_PREFIX"]) == "rq"
        assert env["DATABASE_URL"].startswith("postgresql://matcha_app:")
        assert "@postgres-primary:5432/matcha" in env["DATABASE_URL"]
        assert "@postgres-standby:5432/matcha" in env["MATCHA_STANDBY_DATABASE_URL"]
        waits = services[name]["depends_on"]
        assert waits["migrate"]["condition"] == "service_completed_successfully"
        assert waits["redis-cluster-create"]["condition"] == "service_completed_successfully"
    assert services["api"]["deploy"]["replicas"] >= 2
    assert services["worker"]["deploy"]["replicas"] >= 1
    assert "matcha_owner" in services["migrate"]["environment"]["DATABASE_URL"]
    text = (CLUSTER / "compose.yaml").read_text()
    for secret in ("POSTGRES_PASSWORD", "MATCHA_APP_PASSWORD", "REDIS_PASSWORD"):
        assert re.search(r"\$\{" + secret + r":\?", text), secret
    assert "MATCHA_REPLICATION_PASSWORD" in text


def test_given_both_compose_files_then_the_services_are_hardened_and_configured_alike() -> None:
    """The clustered compose repeats deploy/compose.yaml's app services (it cannot
    extend them): what must not drift apart is held equal here."""
    single = _compose(DEPLOY / "compose.yaml")["services"]
    clustered = _compose(CLUSTER / "compose.yaml")["services"]
    pointed_elsewhere = {"DATABASE_URL", "REDIS_URL"}
    for name in APP_SERVICES:
        for key in HARDENING:
            assert clustered[name].get(key) == single[name].get(key), (name, key)
        for key in ("command", "stop_grace_period", "secrets", "volumes", "deploy"):
            assert clustered[name].get(key) == single[name].get(key), (name, key)
        ours, theirs = clustered[name]["environment"], single[name]["environment"]
        for key, value in theirs.items():
            if key not in pointed_elsewhere:
                assert ours.get(key) == value, (name, key)
    assert clustered["proxy"]["image"] == single["proxy"]["image"]
    assert clustered["proxy"]["ports"] == single["proxy"]["ports"]


def test_given_each_shape_then_the_proxy_mounts_its_upstream_and_sticky_ones_hash_by_match(
    tmp_path: Path,
) -> None:
    for compose, upstream in (
        (DEPLOY / "compose.yaml", "./nginx/upstream.conf"),
        (CLUSTER / "compose.yaml", "../nginx/upstream-by-match.conf"),
    ):
        volumes = _compose(compose)["services"]["proxy"]["volumes"]
        mounts = {v.split(":")[1]: v.split(":")[0] for v in volumes}
        assert mounts["/etc/nginx/matcha/upstream.conf"] == upstream
        for source in mounts.values():
            assert (compose.parent / source).exists(), source
    assert "include /etc/nginx/matcha/upstream.conf;" in (DEPLOY / "nginx.conf").read_text()
    assert "hash " not in (NGINX_DIR / "upstream.conf").read_text()
    harness = proxy.write_conf(tmp_path, 8080, [8001, 8002]).read_text()
    for sticky in (NGINX_DIR / "upstream-by-match.conf", K8S / "upstream.conf"):
        text = sticky.read_text()
        assert "hash $matcha_match_id consistent;" in text, sticky
        assert "include /etc/nginx/matcha/match-id.conf;" in text, sticky
    # make cluster's proxy: the same map file, the same hash
    assert "hash $matcha_match_id consistent;" in harness
    assert f"include {NGINX_DIR / 'match-id.conf'};" in harness


@pytest.mark.skipif(proxy.binary_missing() is not None, reason="nginx is not installed")
@pytest.mark.parametrize(
    "upstream",
    [NGINX_DIR / "upstream.conf", NGINX_DIR / "upstream-by-match.conf", K8S / "upstream.conf"],
    ids=["compose", "compose-cluster", "kubernetes"],
)
def test_given_each_upstream_then_nginx_accepts_deploy_nginx_conf_with_it(
    upstream: Path, tmp_path: Path
) -> None:
    """nginx -t on the real files, their includes pointed here. What the local nginx
    (Debian's 1.22) cannot take is left out: `resolve` (1.27.3), and names that only
    resolve in Docker or Kubernetes (their place taken by 127.0.0.1)."""
    (tmp_path / "match-id.conf").write_text((NGINX_DIR / "match-id.conf").read_text())
    text = upstream.read_text().replace("include /etc/nginx/matcha/", f"include {tmp_path}/")
    text = re.sub(r"\bresolver \S+", "resolver 127.0.0.1", text)
    text = re.sub(r"server \S+:8000 resolve;", "server 127.0.0.1:8000;", text)
    (tmp_path / "upstream.conf").write_text(text)
    conf = (DEPLOY / "nginx.conf").read_text()
    conf = conf.replace("include /etc/nginx/matcha/", f"include {tmp_path}/")
    conf = f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\n" + conf
    (tmp_path / "nginx.conf").write_text(conf)
    checked = subprocess.run(
        [proxy.NGINX, "-t", "-c", str(tmp_path / "nginx.conf"), "-e", str(tmp_path / "e.log")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert checked.returncode == 0, checked.stderr


def _rendered() -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the overlay cannot be rendered here")
    done = subprocess.run(
        [kubectl, "kustomize", "--load-restrictor", "LoadRestrictionsNone", str(K8S)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def _one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].startswith(name)]
    assert len(found) == 1, (kind, name, len(found))
    return found[0]


def test_given_the_kubernetes_overlay_then_redis_is_a_six_node_cluster_made_once() -> None:
    docs = _rendered()
    nodes = _one(docs, "StatefulSet", "redis-cluster")
    assert nodes["spec"]["replicas"] == 6 and nodes["spec"]["serviceName"] == "redis-cluster"
    pod = nodes["spec"]["template"]["spec"]
    (redis,) = pod["containers"]
    args = " ".join(redis["args"])
    assert "--cluster-enabled yes" in args and "--appendonly yes" in args
    assert '--cluster-announce-hostname "$POD_NAME.redis-cluster.' in args
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert redis["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"cpu", "memory"} <= set(redis["resources"]["limits"])
    service = _one(docs, "Service", "redis-cluster")
    assert service["spec"]["clusterIP"] == "None"
    assert {p["port"] for p in service["spec"]["ports"]} == {6379, 16379}
    assert _one(docs, "PodDisruptionBudget", "redis-cluster")["spec"]["maxUnavailable"] == 1
    create = _one(docs, "Job", "redis-cluster-create")
    script = create["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert "--cluster create" in script and "--cluster-replicas 1" in script
    assert "for i in 0 1 2 3 4 5" in script and "cluster_known_nodes:6" in script


def test_given_the_kubernetes_overlay_then_postgres_has_a_standby_and_the_apis_read_it() -> None:
    docs = _rendered()
    pg = _one(docs, "Cluster", "matcha-pg")
    assert pg["apiVersion"].startswith("postgresql.cnpg.io/")
    assert pg["spec"]["instances"] == 2
    assert pg["spec"]["replicationSlots"]["highAvailability"]["enabled"] is True
    secrets = {
        d["metadata"]["name"]: d
        for d in yaml.safe_load_all((K8S / "secrets.example.yaml").read_text())
        if d
    }
    urls = secrets["matcha-secrets"]["stringData"]
    assert "@matcha-pg-rw:5432/matcha" in urls["DATABASE_URL"]
    assert "@matcha-pg-rw:5432/matcha" in urls["MIGRATE_DATABASE_URL"]
    assert "@matcha-pg-ro:5432/matcha" in urls["MATCHA_STANDBY_DATABASE_URL"]
    address = parse_cluster_url(urls["REDIS_URL"])
    assert [h for h, _ in address.nodes] == [f"redis-cluster-{n}.redis-cluster" for n in range(6)]
    for name in ("matcha-pg-owner", "matcha-pg-app"):
        assert name in str(pg["spec"])
    assert set(secrets) >= {"matcha-redis", "matcha-pg-owner", "matcha-pg-app"}

    api = _one(docs, "Deployment", "matcha-api")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in api["env"]}
    standby = env["MATCHA_STANDBY_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    assert standby == {"name": "matcha-secrets", "key": "MATCHA_STANDBY_DATABASE_URL"}
    config = _one(docs, "ConfigMap", "matcha-config")["data"]
    assert hash_tag(config["RQ_KEY_PREFIX"]) == "rq"
    assert float(config["MATCHA_STANDBY_MAX_LAG_S"]) > 0
    replica = (ROOT / "service" / "store" / "replica.py").read_text()
    for name in config:
        if name.startswith("MATCHA_STANDBY_"):
            assert f'"{name}"' in replica, f"{name}: no code reads it"


def test_given_the_kubernetes_overlay_then_the_ingress_reaches_the_apis_via_the_sticky_proxy() -> (
    None
):
    docs = _rendered()
    ingress = _one(docs, "Ingress", "matcha")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    proxy_service = _one(docs, "Service", "matcha-proxy")
    assert backend["name"] == "matcha-proxy"
    assert backend["port"]["name"] in {p["name"] for p in proxy_service["spec"]["ports"]}
    deployment = _one(docs, "Deployment", "matcha-proxy")
    assert proxy_service["spec"]["selector"].items() <= (
        deployment["spec"]["template"]["metadata"]["labels"].items()
    )
    pod = deployment["spec"]["template"]["spec"]
    (nginx,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert nginx["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"cpu", "memory"} <= set(nginx["resources"]["limits"])
    config = _one(docs, "ConfigMap", "matcha-proxy-nginx")
    (volume,) = [v for v in pod["volumes"] if "configMap" in v]
    assert volume["configMap"]["name"] == config["metadata"]["name"]
    mounted = {m["subPath"]: m["mountPath"] for m in nginx["volumeMounts"] if "subPath" in m}
    assert mounted == {
        "nginx.conf": "/etc/nginx/nginx.conf",
        "upstream.conf": "/etc/nginx/matcha/upstream.conf",
        "match-id.conf": "/etc/nginx/matcha/match-id.conf",
    }
    assert config["data"]["nginx.conf"] == (DEPLOY / "nginx.conf").read_text()
    assert config["data"]["match-id.conf"] == (NGINX_DIR / "match-id.conf").read_text()
    # the proxy hashes over the API pods themselves, through their headless Service
    pods = _one(docs, "Service", "matcha-api-pods")
    assert pods["spec"]["clusterIP"] == "None"
    api_labels = _one(docs, "Deployment", "matcha-api")["spec"]["template"]["metadata"]["labels"]
    assert pods["spec"]["selector"].items() <= api_labels.items()
    assert (
        "server matcha-api-pods.matcha.svc.cluster.local:8000 resolve;"
        in (config["data"]["upstream.conf"])
    )
    assert _one(docs, "HorizontalPodAutoscaler", "matcha-api")["spec"]["maxReplicas"] > 2
    assert _one(docs, "Deployment", "matcha-worker")["spec"]["replicas"] >= 2
