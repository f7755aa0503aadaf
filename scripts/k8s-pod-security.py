#!/usr/bin/env python3
"""Check every Pod template in deploy/k8s/*.yaml (or the files given)
against the Pod Security Standards' "restricted" profile, offline.

The rules are the profile's as the Kubernetes documentation states them
for v1.31 (https://kubernetes.io/docs/concepts/security/pod-security-standards/,
"Baseline" and "Restricted"; restricted includes baseline), written out
below (RULES) so that no network and no cluster is needed. Three rules of
arbor's own follow them (ARBOR_RULES): a read-only root filesystem, no
service-account token, and a memory limit on every container.

A Pod template is the spec of a Pod, or the pod template of a Job,
CronJob, Deployment, StatefulSet, DaemonSet, ReplicaSet or
ReplicationController. Containers are `containers`, `initContainers` and
`ephemeralContainers`.

Usage:
  scripts/k8s-pod-security.py [FILE.yaml ...]   exit 1 on any violation
  scripts/k8s-pod-security.py --self-test       plants a violation of each
                                                rule in a copy of job.yaml
                                                and checks it is caught

Needs PyYAML: the system's python3-yaml, or the venv that
scripts/k8s-validate.sh installs (used when the system has none).
"""

import copy
import glob
import os
import sys

try:
    import yaml
except ImportError:
    venv = os.environ.get(
        "ARBOR_K8S_VENV", os.path.expanduser("~/.cache/arbor-k8s-venv")
    )
    python = os.path.join(venv, "bin", "python3")
    if os.path.exists(python) and os.path.realpath(sys.executable) != os.path.realpath(python):
        os.execv(python, [python] + sys.argv)
    sys.exit(
        "k8s-pod-security: needs PyYAML (apt-get install python3-yaml, or run "
        "scripts/k8s-validate.sh once, which installs a venv with it)"
    )

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Baseline, "Capabilities": what `add` may hold.
BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}
# Baseline, "Sysctls": the safe set.
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
}
# Baseline, "SELinux": the types allowed.
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
# Restricted, "Volume Types": the only sources a volume may have.
RESTRICTED_VOLUMES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
    "persistentVolumeClaim", "projected", "secret",
}
VOLUME_FIELDS_NOT_SOURCES = {"name"}


def containers(spec):
    for kind in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(kind) or []:
            yield c.get("name", "?"), c


def sc(obj):
    return obj.get("securityContext") or {}


# Each rule: (id, level, title, check). check(pod_spec, metadata) yields
# the violations' words.


def host_process(spec, _meta):
    if (sc(spec).get("windowsOptions") or {}).get("hostProcess"):
        yield "spec.securityContext.windowsOptions.hostProcess must be unset or false"
    for name, c in containers(spec):
        if (sc(c).get("windowsOptions") or {}).get("hostProcess"):
            yield f"container {name}: windowsOptions.hostProcess must be unset or false"


def host_namespaces(spec, _meta):
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            yield f"spec.{field} must be unset or false"


def privileged(spec, _meta):
    for name, c in containers(spec):
        if sc(c).get("privileged"):
            yield f"container {name}: securityContext.privileged must be unset or false"


def baseline_capabilities(spec, _meta):
    for name, c in containers(spec):
        added = set((sc(c).get("capabilities") or {}).get("add") or [])
        extra = sorted(added - BASELINE_CAPABILITIES)
        if extra:
            yield f"container {name}: capabilities.add holds {extra}, beyond baseline's list"


def host_path(spec, _meta):
    for v in spec.get("volumes") or []:
        if "hostPath" in v:
            yield f"volume {v.get('name', '?')}: hostPath volumes are forbidden"


def host_ports(spec, _meta):
    for name, c in containers(spec):
        for p in c.get("ports") or []:
            if p.get("hostPort", 0) not in (0, None):
                yield f"container {name}: ports[].hostPort must be unset or 0"


def app_armor(spec, meta):
    allowed = {None, "RuntimeDefault", "Localhost"}
    if (sc(spec).get("appArmorProfile") or {}).get("type") not in allowed:
        yield "spec.securityContext.appArmorProfile.type must be RuntimeDefault or Localhost"
    for name, c in containers(spec):
        if (sc(c).get("appArmorProfile") or {}).get("type") not in allowed:
            yield f"container {name}: appArmorProfile.type must be RuntimeDefault or Localhost"
    prefix = "container.apparmor.security.beta.kubernetes.io/"
    for key, value in ((meta or {}).get("annotations") or {}).items():
        if key.startswith(prefix) and not (
            value == "runtime/default" or str(value).startswith("localhost/")
        ):
            yield f"annotation {key}: must be runtime/default or localhost/*"


def se_linux(spec, _meta):
    for where, obj in [("spec", spec)] + [(f"container {n}", c) for n, c in containers(spec)]:
        options = sc(obj).get("seLinuxOptions") or {}
        if options.get("type", "") not in SELINUX_TYPES:
            yield f"{where}: seLinuxOptions.type must be one of {sorted(SELINUX_TYPES - {''})}"
        for field in ("user", "role"):
            if options.get(field, ""):
                yield f"{where}: seLinuxOptions.{field} must be unset"


def proc_mount(spec, _meta):
    for name, c in containers(spec):
        if sc(c).get("procMount", "Default") != "Default":
            yield f"container {name}: procMount must be unset or Default"


def baseline_seccomp(spec, _meta):
    for where, obj in [("spec", spec)] + [(f"container {n}", c) for n, c in containers(spec)]:
        if (sc(obj).get("seccompProfile") or {}).get("type") == "Unconfined":
            yield f"{where}: seccompProfile.type must not be Unconfined"


def sysctls(spec, _meta):
    for s in sc(spec).get("sysctls") or []:
        if s.get("name") not in SAFE_SYSCTLS:
            yield f"spec.securityContext.sysctls: {s.get('name')} is not a safe sysctl"


def volume_types(spec, _meta):
    for v in spec.get("volumes") or []:
        sources = set(v) - VOLUME_FIELDS_NOT_SOURCES
        bad = sorted(sources - RESTRICTED_VOLUMES)
        if bad:
            yield f"volume {v.get('name', '?')}: {bad} is not a volume type restricted allows"


def privilege_escalation(spec, _meta):
    for name, c in containers(spec):
        if sc(c).get("allowPrivilegeEscalation") is not False:
            yield f"container {name}: securityContext.allowPrivilegeEscalation must be false"


def non_root(spec, _meta):
    pod = sc(spec).get("runAsNonRoot")
    for name, c in containers(spec):
        mine = sc(c).get("runAsNonRoot")
        if mine is False or (mine is None and pod is not True):
            yield (
                f"container {name}: runAsNonRoot must be true (in the container or the "
                "pod's securityContext)"
            )


def non_root_user(spec, _meta):
    if sc(spec).get("runAsUser") == 0:
        yield "spec.securityContext.runAsUser must not be 0"
    for name, c in containers(spec):
        if sc(c).get("runAsUser") == 0:
            yield f"container {name}: runAsUser must not be 0"


def restricted_seccomp(spec, _meta):
    allowed = {"RuntimeDefault", "Localhost"}
    pod = (sc(spec).get("seccompProfile") or {}).get("type")
    for name, c in containers(spec):
        mine = (sc(c).get("seccompProfile") or {}).get("type")
        if (mine or pod) not in allowed:
            yield (
                f"container {name}: seccompProfile.type must be RuntimeDefault or Localhost "
                "(in the container or the pod's securityContext)"
            )


def restricted_capabilities(spec, _meta):
    for name, c in containers(spec):
        caps = sc(c).get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            yield f"container {name}: capabilities.drop must include ALL"
        extra = sorted(set(caps.get("add") or []) - {"NET_BIND_SERVICE"})
        if extra:
            yield f"container {name}: capabilities.add may hold only NET_BIND_SERVICE, not {extra}"


def read_only_root(spec, _meta):
    for name, c in containers(spec):
        if sc(c).get("readOnlyRootFilesystem") is not True:
            yield f"container {name}: securityContext.readOnlyRootFilesystem must be true"


def no_service_account_token(spec, _meta):
    if spec.get("automountServiceAccountToken") is not False:
        yield "spec.automountServiceAccountToken must be false"


def memory_limit(spec, _meta):
    for name, c in containers(spec):
        if "memory" not in ((c.get("resources") or {}).get("limits") or {}):
            yield f"container {name}: resources.limits.memory must be set"


RULES = [
    ("baseline", "HostProcess", host_process),
    ("baseline", "Host Namespaces", host_namespaces),
    ("baseline", "Privileged Containers", privileged),
    ("baseline", "Capabilities", baseline_capabilities),
    ("baseline", "HostPath Volumes", host_path),
    ("baseline", "Host Ports", host_ports),
    ("baseline", "AppArmor", app_armor),
    ("baseline", "SELinux", se_linux),
    ("baseline", "/proc Mount Type", proc_mount),
    ("baseline", "Seccomp", baseline_seccomp),
    ("baseline", "Sysctls", sysctls),
    ("restricted", "Volume Types", volume_types),
    ("restricted", "Privilege Escalation", privilege_escalation),
    ("restricted", "Running as Non-root", non_root),
    ("restricted", "Running as Non-root user", non_root_user),
    ("restricted", "Seccomp", restricted_seccomp),
    ("restricted", "Capabilities", restricted_capabilities),
]
ARBOR_RULES = [
    ("arbor", "Read-only root filesystem", read_only_root),
    ("arbor", "No service-account token", no_service_account_token),
    ("arbor", "Memory limit", memory_limit),
]


def pod_templates(doc):
    """(where, pod spec, pod metadata) of each Pod template in one document."""
    kind = doc.get("kind")
    spec = doc.get("spec") or {}
    if kind == "Pod":
        yield spec, doc.get("metadata")
    elif kind == "CronJob":
        template = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
        yield template.get("spec") or {}, template.get("metadata")
    elif kind in ("Job", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet",
                  "ReplicationController", "PodTemplate"):
        template = (doc.get("template") if kind == "PodTemplate" else spec.get("template")) or {}
        yield template.get("spec") or {}, template.get("metadata")


def violations(doc):
    """Each violation of one document: (level, title, words)."""
    for spec, meta in pod_templates(doc):
        for level, title, check in RULES + ARBOR_RULES:
            for words in check(spec, meta):
                yield level, title, words


def shown(path):
    """`path` from the repository's root when it is inside it."""
    full = os.path.abspath(path)
    return os.path.relpath(full, ROOT) if full.startswith(ROOT + os.sep) else path


def check_files(paths):
    failed = 0
    templates = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            docs = [d for d in yaml.safe_load_all(f) if isinstance(d, dict)]
        for doc in docs:
            name = f"{doc.get('kind')} {(doc.get('metadata') or {}).get('name', '?')}"
            templates += sum(1 for _ in pod_templates(doc))
            for level, title, words in violations(doc):
                failed += 1
                print(f"{shown(path)}: {name}: {words} ({level}: {title})")
    if failed:
        print(f"k8s-pod-security: {failed} violation(s) of Pod Security \"restricted\" or arbor's rules")
        return 1
    print(f"k8s-pod-security: {templates} Pod template(s) in {len(paths)} file(s) pass "
          "Pod Security \"restricted\" (v1.31) and arbor's rules")
    return 0


# --self-test: one planted violation per rule, on job.yaml's pod spec.
def plant(spec, meta, rule):
    c = spec["containers"][0]
    csc = c.setdefault("securityContext", {})
    psc = spec.setdefault("securityContext", {})
    if rule == "HostProcess":
        csc["windowsOptions"] = {"hostProcess": True}
    elif rule == "Host Namespaces":
        spec["hostNetwork"] = True
    elif rule == "Privileged Containers":
        csc["privileged"] = True
    elif rule == "baseline Capabilities":
        csc["capabilities"]["add"] = ["SYS_ADMIN"]
    elif rule == "HostPath Volumes":
        spec["volumes"].append({"name": "host", "hostPath": {"path": "/"}})
    elif rule == "Host Ports":
        c["ports"][0]["hostPort"] = 7700
    elif rule == "AppArmor":
        csc["appArmorProfile"] = {"type": "Unconfined"}
    elif rule == "SELinux":
        psc["seLinuxOptions"] = {"type": "spc_t"}
    elif rule == "/proc Mount Type":
        csc["procMount"] = "Unmasked"
    elif rule == "baseline Seccomp":
        csc["seccompProfile"] = {"type": "Unconfined"}
    elif rule == "Sysctls":
        psc["sysctls"] = [{"name": "kernel.msgmax", "value": "1"}]
    elif rule == "Volume Types":
        spec["volumes"].append({"name": "git", "gitRepo": {"repository": "x"}})
    elif rule == "Privilege Escalation":
        del csc["allowPrivilegeEscalation"]
    elif rule == "Running as Non-root":
        csc["runAsNonRoot"] = False
    elif rule == "Running as Non-root user":
        csc["runAsUser"] = 0
    elif rule == "restricted Seccomp":
        del psc["seccompProfile"]
    elif rule == "restricted Capabilities":
        csc["capabilities"] = {"drop": ["NET_RAW"]}
    elif rule == "Read-only root filesystem":
        csc["readOnlyRootFilesystem"] = False
    elif rule == "No service-account token":
        del spec["automountServiceAccountToken"]
    elif rule == "Memory limit":
        del c["resources"]["limits"]
    else:
        raise KeyError(rule)


def self_test():
    with open(os.path.join(ROOT, "deploy/k8s/job.yaml"), encoding="utf-8") as f:
        good = yaml.safe_load(f)
    assert not list(violations(good)), list(violations(good))
    titles = [t for _, t, _ in RULES + ARBOR_RULES]
    failures = 0
    for level, title, _ in RULES + ARBOR_RULES:
        key = f"{level} {title}" if titles.count(title) > 1 else title
        doc = copy.deepcopy(good)
        template = doc["spec"]["template"]
        plant(template["spec"], template.get("metadata"), key)
        found = [(lv, t) for lv, t, _ in violations(doc)]
        if (level, title) not in found:
            failures += 1
            print(f"self-test: a planted {key} violation was not caught (found {found})")
    if failures:
        return 1
    print(f"k8s-pod-security: self-test: each of {len(titles)} rules catches its planted violation")
    return 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    paths = argv or sorted(glob.glob(os.path.join(ROOT, "deploy/k8s/*.yaml")))
    if not paths:
        print("k8s-pod-security: no deploy/k8s/*.yaml", file=sys.stderr)
        return 1
    return check_files(paths)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
