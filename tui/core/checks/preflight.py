"""Preflight verdicts for a freshly rented box: plain functions over recorded facts.

Each check gives pass / warn / fail and one line. The facts come from the probe
(`remote_probe.preflight_facts.collect` plus the GPU inventory); the config says what was rented.
"""

import dataclasses
import re
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from tui.core.i18n import N_, _, ngettext

if TYPE_CHECKING:
    from tui.core.config import HostConfig
    from tui.core.model import GpuLive
    from tui.core.providers import Preset

Facts = Mapping[str, Any]  # the probe's preflight facts (and the inventory inside them)

PASS, WARN, FAIL = "pass", "warn", "fail"
ORDER = {PASS: 0, WARN: 1, FAIL: 2}

# name pattern -> (nominal total MiB as NVML reports it, dense bf16/fp16 tensor TFLOPS)
GPU_SPECS = (
    (r"H200", 143771, 989),
    (r"H100.*PCIe", 81559, 756),
    (r"H100|H800", 81559, 989),
    (r"A100.*80GB|A800.*80GB", 81920, 312),
    (r"A100|A800", 40960, 312),
    (r"L40S", 46068, 362),
    (r"L40\b|A40\b", 46068, 150),
    (r"L4\b", 23034, 121),
    (r"A10\b|A10G", 23028, 125),
    (r"RTX 6000 Ada", 49140, 364),
    (r"A6000", 49140, 155),
    (r"4090", 24564, 165),
    (r"3090", 24576, 71),
    (r"V100.*32GB", 32768, 125),
    (r"V100", 16384, 125),
    (r"T4\b", 15360, 65),
)
DATACENTER = re.compile(r"H200|H100|H800|A100|A800|L40|A40|L4\b|A10|V100|T4\b")


@dataclasses.dataclass
class Check:
    name: str
    verdict: str
    reason: str


def spec_for(name: Optional[str]) -> Optional[Dict[str, int]]:
    for pattern, mem, tflops in GPU_SPECS:
        if name and re.search(pattern, name):
            return {"mem_total": mem, "tflops": tflops}
    return None


def worst(checks: Iterable[Check]) -> str:
    return max((c.verdict for c in checks), key=ORDER.__getitem__, default=PASS)


PRESS_D = N_(" — press d")


def summary(checks: Sequence[Check]) -> str:
    """The one line a toast and the doctor's head show for these checks."""
    fails = sum(c.verdict == "fail" for c in checks)
    warns = sum(c.verdict == "warn" for c in checks)
    if not fails and not warns:
        return _("Preflight: all %d checks pass") % len(checks)
    return ngettext("Preflight: %d failed, %d warning", "Preflight: %d failed, %d warnings",
                    warns) % (fails, warns) + _(PRESS_D)


def exit_code(checks: Iterable[Check]) -> int:
    return ORDER[worst(checks)]


def _cuda_tuple(text: Optional[str]) -> Optional[Tuple[int, int]]:
    m = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def _expect_words(expect: Optional[str]) -> List[str]:
    return (expect or "").lower().replace(",", " ").split()


def slice_verdict(kind: str, slice_names: Iterable[Optional[str]], expect: Optional[str]) -> str:
    """A MIG or vGPU slice judged against what was ordered (`expect` in the host's config):
    ordered -> pass; nothing said -> warn (RunPod and others sell MIG SKUs); a whole card ordered,
    or another slice profile -> fail."""
    words = _expect_words(expect)
    if not words:
        return WARN
    if kind not in words:
        return FAIL
    profiles = [w for w in words if w != kind]
    if profiles and not all(any(p in (n or "").lower() for p in profiles) for n in slice_names):
        return FAIL
    return PASS


def slice_hint(kind: str, slice_names: Iterable[Optional[str]], expect: Optional[str]) -> str:
    verdict = slice_verdict(kind, slice_names, expect)
    if verdict == PASS:
        return _(" (as ordered: %s)") % expect
    if verdict == WARN:
        return _(" (set expect = \"%s\" for this host if you ordered one)") % kind
    return _(" (ordered: %s)") % expect


def check_gpus(inv: Facts, rented: Optional[int], expect: Optional[str] = None) -> List[Check]:
    gpus = inv.get("gpus") or []
    out = []
    if not gpus:
        return [Check("GPU", FAIL, _("no NVIDIA GPU: %s") % (inv.get("reason") or _("none found")))]
    if rented is not None:
        out.append(Check(_("GPU count"), PASS if len(gpus) == rented else FAIL,
                         ngettext("%d GPU, as rented", "%d GPUs, as rented", len(gpus)) % len(gpus)
                         if len(gpus) == rented else
                         ngettext("%d GPU visible but %d were rented", "%d GPUs visible but %d were rented",
                                  len(gpus)) % (len(gpus), rented)))
    for g in gpus:
        label = "GPU %s %s" % (g.get("index"), g.get("name"))
        spec = spec_for(g.get("name"))
        if g.get("mig_mode") == 1:
            slices = g.get("mig_devices") or []
            names = ", ".join(s.get("name") or "?" for s in slices) or _("none visible")
            out.append(Check(label, slice_verdict("mig", [s.get("name") or "" for s in slices], expect),
                             ngettext("MIG is on: a slice, not a whole card (%d slice: %s)",
                                      "MIG is on: a slice, not a whole card (%d slices: %s)", len(slices))
                             % (len(slices), names) + slice_hint("mig", [s.get("name") or "" for s in slices], expect)))
        elif g.get("virt_mode") == "vgpu":
            out.append(Check(label, slice_verdict("vgpu", [], expect),
                             _("virtualization mode vGPU: a virtual slice of a card, not a whole GPU")
                             + slice_hint("vgpu", [], expect)))
        elif spec and g.get("mem_total") and g["mem_total"] < 0.9 * spec["mem_total"]:
            out.append(Check(label, FAIL, _("%d MiB of VRAM where a %s has %d: a slice or a smaller "
                                           "variant") % (g["mem_total"], g.get("name"), spec["mem_total"])))
        elif spec:
            out.append(Check(label, PASS, _("%d MiB VRAM, a whole card") % g["mem_total"]))
        else:
            out.append(Check(label, PASS, _("%s MiB VRAM (model not in gputui's table)") % g.get("mem_total")))
    return out


def check_torch(inv: Facts, torch: Facts) -> List[Check]:
    out = []
    if torch.get("error"):
        return [Check(_("training python"), WARN, torch["error"])]
    py = torch.get("python_path")
    if not torch.get("torch"):
        return [Check("torch", WARN, _("no torch in %s (%s)") % (py, torch.get("torch_error", _("not installed"))))]
    version = torch["torch"]
    gpus = inv.get("gpus") or []
    if "+cpu" in version or (torch.get("torch_cuda") is None and gpus):
        out.append(Check(_("torch build"), FAIL, _("torch %s in %s is a CPU-only build: reinstall the CUDA "
                         "wheel (pip install torch --index-url .../whl/cu1XX)") % (version, py)))
    else:
        out.append(Check(_("torch build"), PASS, "torch %s, CUDA %s" % (version, torch.get("torch_cuda"))))
    need, have = _cuda_tuple(torch.get("torch_cuda")), _cuda_tuple(inv.get("cuda_driver"))
    if need and have:
        if need[0] > have[0]:
            out.append(Check(_("CUDA vs driver"), FAIL, _("torch needs CUDA %s but driver %s supports %s: "
                             "install a torch built for CUDA %d.x or get a newer driver")
                             % (torch["torch_cuda"], inv.get("driver"), inv["cuda_driver"], have[0])))
        elif need > have:
            out.append(Check(_("CUDA vs driver"), WARN, _("torch built for CUDA %s, driver supports %s: works "
                             "through minor-version compatibility, JIT-compiled kernels may not")
                             % (torch["torch_cuda"], inv["cuda_driver"])))
        else:
            out.append(Check(_("CUDA vs driver"), PASS, _("driver %s supports CUDA %s >= torch's %s")
                             % (inv.get("driver"), inv["cuda_driver"], torch["torch_cuda"])))
    if gpus:
        ok = torch.get("cuda_available")
        out.append(Check("torch.cuda.is_available()", PASS if ok else FAIL,
                         _("%d device(s) visible to torch") % torch.get("device_count", 0) if ok else
                         "False: %s" % (torch.get("cuda_error") or _("torch cannot use the GPU"))))
    return out


def check_visible_devices(inv: Facts, value: Optional[str]) -> List[Check]:
    if value is None:
        return [Check("CUDA_VISIBLE_DEVICES", PASS, _("not set: every GPU is visible"))]
    gpus = inv.get("gpus") or []
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        return [Check("CUDA_VISIBLE_DEVICES", FAIL, _("set but empty: CUDA sees no GPU at all"))]
    uuids = {g.get("uuid") for g in gpus}
    bad = [v for v in items if not ((v.isdigit() and int(v) < len(gpus)) or v in uuids
                                    or any(u and u.startswith(v) for u in uuids))]
    if bad:
        return [Check("CUDA_VISIBLE_DEVICES", FAIL, _("%r names devices that do not exist here (%s)")
                      % (value, ", ".join(bad)))]
    return [Check("CUDA_VISIBLE_DEVICES", PASS, "%r" % value)]


def smoke_not_run(inv: Facts, torch: Facts, gpus_busy: bool) -> Optional[str]:
    """Why an asked-for matmul gave no row (the doctor showed none and said nothing), or None."""
    if gpus_busy:
        return _("not run: a GPU has a compute process, and a matmul would disturb it")
    if not inv.get("gpus"):
        return _("not run: no GPU on this box")
    if torch.get("error") or not torch.get("torch"):
        return _("not run: no torch in the training python (see the torch row)")
    if not torch.get("cuda_available"):
        return _("not run: torch cannot use the GPU (see torch.cuda.is_available())")
    return None


def check_smoke(inv: Facts, torch: Facts,
                sample_gpus: Optional[Mapping[int, "GpuLive"]] = None,
                asked: bool = False, gpus_busy: bool = False) -> List[Check]:
    out = []
    if asked and not torch.get("smoke"):
        why = smoke_not_run(inv, torch, gpus_busy)
        return [Check(_("matmul"), WARN, why)] if why else []
    static = {g.get("index"): g for g in inv.get("gpus") or []}
    for s in torch.get("smoke") or []:
        g = static.get(s.get("index"), {})
        label = _("matmul GPU %s") % s.get("index")
        if s.get("error"):
            out.append(Check(label, FAIL, s["error"]))
            continue
        spec = spec_for(g.get("name") or s.get("name"))
        if not spec:
            out.append(Check(label, PASS, _("%.0f TFLOPS %s (no spec to compare)") % (s["tflops"], s["dtype"])))
            continue
        frac = s["tflops"] / spec["tflops"]
        dyn = (sample_gpus or {}).get(s.get("index"))  # tui.core.model.GpuLive
        clocks = ""
        if dyn is not None:
            clocks = _("; SM %s/%s MHz, power %s/%s W%s") % (
                dyn.clock_sm, g.get("clock_sm_max"), dyn.power, g.get("power_limit"),
                (_(", throttled: ") + ", ".join(dyn.throttle_reasons)) if dyn.throttle else "")
        text = _("%.0f TFLOPS %s = %d%% of the %s spec (%d)%s") % (
            s["tflops"], s["dtype"], round(frac * 100), g.get("name"), spec["tflops"], clocks)
        if frac < 0.25:
            out.append(Check(label, FAIL, text + _(" → shared, throttled or power-capped card")))
        elif frac < 0.5:
            out.append(Check(label, WARN, text + _(" → far below spec")))
        else:
            out.append(Check(label, PASS, text))
    return out


def check_host(inv: Facts, facts: Facts, cfg: "HostConfig") -> List[Check]:
    gpus = inv.get("gpus") or []
    out = []
    n = max(1, len(gpus))
    cores = facts.get("cpu_limit") or facts.get("ncpu") or 0
    datacenter = any(DATACENTER.search(g.get("name") or "") for g in gpus)
    if gpus:
        verdict = PASS if cores / n >= cfg.min_cores_per_gpu or not datacenter else WARN
        out.append(Check(_("CPU cores per GPU"), verdict, _("%.1f cores per GPU%s") % (
            cores / n, "" if verdict == PASS else _(" (< %g: the dataloader will starve the GPU)")
            % cfg.min_cores_per_gpu)))
        ram = (facts.get("mem_total") or 0) / 1024.0 / n
        verdict = PASS if ram >= cfg.min_ram_gb_per_gpu or not datacenter else WARN
        out.append(Check(_("RAM per GPU"), verdict, _("%.0f GB per GPU%s") % (
            ram, "" if verdict == PASS else _(" (< %g GB)") % cfg.min_ram_gb_per_gpu)))
    return out


def check_disks(facts: Facts, preset: Optional["Preset"]) -> List[Check]:
    disks = {d["mount"]: d for d in facts.get("disks") or []}
    out = []
    root = disks.get("/")
    if root:
        free = root["free"] / 1024.0
        out.append(Check(_("system disk"), PASS if free >= 10 else WARN,
                         _("%.0f GB free on /%s") % (free, "" if free >= 10 else _(" (pip and checkpoints will fail)"))))
    # ~ on its own disk (a provider's volume, a quota'd /home): full, it breaks the probe's
    # cache, pip --user and checkpoints even while / has room (issue 23)
    home = next((f for f in facts.get("filesystems") or [] if f.get("role") == "home"), None)
    if home and home.get("mount") not in (None, "/") and home.get("free") is not None:
        free = home["free"] / 1024.0
        out.append(Check(_("home disk"), PASS if free >= 1 else WARN,
                         _("%.1f GB free on %s (%s)%s") % (
                             free, home["mount"], home.get("path") or "~",
                             "" if free >= 1 else _(": full; the probe falls back to /tmp, "
                                                    "pip --user and checkpoints in ~ will fail"))))
    for path in preset.persistent_paths if preset else ():
        if path == "/":
            continue
        d = disks.get(path)
        if d is None:
            out.append(Check(_("data disk %s") % path, WARN, _("not mounted: data saved there may not persist")))
        else:
            free = d["free"] / 1024.0
            out.append(Check(_("data disk %s") % path, PASS if free >= 20 else WARN, _("%.0f GB free") % free))
    return out


def net_hint(host: str, facts: Facts, preset: Optional["Preset"]) -> str:
    """What to do when `host` does not answer, for this provider (issue 22)."""
    key = preset.key if preset else None
    if key in ("autodl", "gpuhub") and "/etc/network_turbo" in (facts.get("network_files") or ()):
        if "pypi" in host:
            return _(" → pip: use a mirror (pip config set global.index-url "
                     "https://mirrors.aliyun.com/pypi/simple); GitHub/HF: source /etc/network_turbo")
        return _(" → run `source /etc/network_turbo` (AutoDL's academic proxy) before downloading")
    if "huggingface" in host:
        return _(" → use a mirror (`export HF_ENDPOINT=https://hf-mirror.com` before python; bash, zsh and fish alike) or upload weights")
    if "pypi" in host:
        if facts.get("pip_index"):
            return _(" → pip already uses %s") % facts["pip_index"]
        return _(" → configure a pip mirror")
    return ""


def check_net(facts: Facts, preset: Optional["Preset"] = None) -> List[Check]:
    out = []
    for r in facts.get("net") or []:
        host = re.sub(r"^https?://([^/]+).*$", r"\1", r["url"])
        if r.get("ok"):
            out.append(Check(_("reach %s") % host, PASS, _("answered in %d ms") % r.get("ms", 0)))
        else:
            out.append(Check(_("reach %s") % host, WARN, _("no answer: %s%s")
                             % (r.get("error"), net_hint(host, facts, preset))))
    return out


ROLE_NAMES = {"home": N_("home"), "cwd": N_("working directory"), "data": N_("data")}


def check_filesystems(facts: Facts) -> List[Check]:
    """Every filesystem holding the home, the working directory or a data dir, tmpfs included."""
    by_mount: Dict[str, dict] = {}
    for f in facts.get("filesystems") or []:
        role = _(ROLE_NAMES.get(f["role"], f["role"]))
        by_mount.setdefault(f["mount"], {"f": f, "roles": [], "home": False})
        by_mount[f["mount"]]["roles"].append("%s %s" % (role, f["path"]) if f["role"] == "data"
                                             else "%s (%s)" % (role, f["path"]))
        by_mount[f["mount"]]["home"] |= f["role"] in ("home", "cwd")
    out = []
    for mount, e in by_mount.items():
        f = e["f"]
        free = f["free"] / 1024.0
        tmp = f["fstype"] in ("tmpfs", "ramfs")
        home = e["home"]
        verdict = WARN if free < (10 if mount == "/" or home else 5) or (tmp and home) else PASS
        why = ""
        if tmp and home:
            why = _(" → in memory: lost at restart, and it counts against RAM")
        elif free < 10 and verdict == WARN:
            why = _(" → pip and checkpoints will fail")
        out.append(Check(_("disk %s") % mount, verdict, _("%.0f GB free of %.0f (%s) for %s%s") % (
            free, f["total"] / 1024.0, f["fstype"], ", ".join(e["roles"]), why)))
    return out


# Per direction, per lane, after line encoding (8b/10b to Gen2, 128b/130b from Gen3): the PCI-SIG line
# rates 2.5/5/8/16/32/64 GT/s (UNCONFIRMED from a page in this session; well-known figures).
PCIE_GBPS_PER_LANE = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
# NVLink 2/3/4: 25 GB/s per link per direction (H100: 900 GB/s over 18 links, both directions; A100: 600 GB/s
# over 12). NVIDIA's datasheet figures, UNCONFIRMED from a page in this session.
NVLINK_GBPS_PER_LINK = 25.0


def pcie_gbps(gen: Any, width: Any) -> Optional[float]:
    lane = PCIE_GBPS_PER_LANE.get(gen)
    return lane * width if lane and width else None


def pair_gbps(pair: Mapping[str, Any], links: Mapping[int, Mapping[str, Any]]) -> Optional[float]:
    """What a device-to-device copy between two GPUs should reach (GB/s, one direction), or None."""
    if pair.get("nvlinks"):
        return pair["nvlinks"] * NVLINK_GBPS_PER_LINK
    a, b = links.get(pair["a"], {}), links.get(pair["b"], {})
    rates: List[Any] = [pcie_gbps(x.get("pcie_gen_max"), x.get("pcie_width")) for x in (a, b)]
    if None in rates:
        return None
    rate = min(rates)
    return rate if pair.get("p2p") == "ok" else rate / 2  # through host memory: down and up again


def allreduce_gbps(pairs: Iterable[Mapping[str, Any]], links: Mapping[int, Mapping[str, Any]],
                   n: int) -> Optional[float]:
    """Expected all-reduce bus bandwidth: the slowest hop of the ring 0-1-..-(n-1)-0."""
    by = {(p["a"], p["b"]): p for p in pairs}
    hops: List[Any] = []
    for i in range(n):
        a, b = sorted((i, (i + 1) % n))
        if a == b or (a, b) not in by:
            continue
        hops.append(pair_gbps(by[(a, b)], links))
    return min(hops) if hops and None not in hops else None


def bandwidth_verdict(measured: Optional[float], expected: Optional[float]) -> Tuple[str, Any]:
    """A measured copy or all-reduce against what the link should give. -> (verdict, fraction)."""
    if not measured or not expected:
        return PASS, None
    frac = measured / expected
    return (PASS if frac >= 0.5 else WARN if frac >= 0.25 else FAIL), frac


def link_verdict(g: Mapping[str, Any], busy: bool = False) -> Optional[Tuple[str, str]]:
    """One GPU's PCIe link, negotiated vs maximum. -> (verdict, reason) or None when all is well/unknown."""
    gen, gen_max, w, w_max = g.get("pcie_gen"), g.get("pcie_gen_max"), g.get("pcie_width"), g.get("pcie_width_max")
    if w and w_max and w < w_max:
        return (FAIL if w * 2 <= w_max else WARN), _("PCIe trained at x%d of x%d: host↔GPU copies at %d%% "
                                                      "speed (a riser or a bad slot)") % (w, w_max, round(100 * w / w_max))
    if gen and gen_max and gen < gen_max:
        return WARN, _("PCIe Gen%d of Gen%d%s") % (gen, gen_max, _(" under load: the slot or the board limits it")
                                                    if busy else _(" (an idle GPU may drop its link speed to save "
                                                                   "power: check again under load)"))
    return None


def check_interconnect(topology: Optional[Facts], torch: Optional[Facts] = None,
                       sample_gpus: Optional[Mapping[int, "GpuLive"]] = None) -> List[Check]:
    """NVLink/PCIe topology, P2P between every GPU pair, link training, and the measured copies."""
    if not topology or topology.get("error"):
        return [Check(_("interconnect"), WARN, topology["error"])] if topology else []
    links = {g["index"]: g for g in topology.get("gpus") or []}
    pairs = topology.get("pairs") or []
    out = []
    for i, g in sorted(links.items()):
        live = (sample_gpus or {}).get(i)  # tui.core.model.GpuLive
        busy = bool(live is not None and live.util)
        v = link_verdict(g, busy)
        if v:
            out.append(Check(_("PCIe GPU %d") % i, v[0], v[1]))
    most = max((g.get("nvlinks") or 0 for g in links.values()), default=0)
    for i, g in sorted(links.items()):
        if most and (g.get("nvlinks") or 0) < most:
            out.append(Check(_("NVLink GPU %d") % i, WARN, _("%d NVLinks active where the other GPUs have %d")
                             % (g.get("nvlinks") or 0, most)))
    if pairs:
        kinds: Dict[str, List[str]] = {}
        for p in pairs:
            kinds.setdefault(p["path"] or "?", []).append("%d-%d" % (p["a"], p["b"]))
        no_p2p = [p for p in pairs if p.get("p2p") == "not supported"]
        summary = "; ".join("%s: %s" % (k, " ".join(v[:6]) + (" …" if len(v) > 6 else "")) for k, v in sorted(kinds.items()))
        if no_p2p:
            out.append(Check(_("GPU-to-GPU"), WARN, ngettext(
                "%d pair without P2P (%s): NCCL goes through host memory, multi-GPU scaling suffers",
                "%d pairs without P2P (%s): NCCL goes through host memory, multi-GPU scaling suffers",
                len(no_p2p)) % (len(no_p2p), summary)))
        else:
            out.append(Check(_("GPU-to-GPU"), PASS, _("P2P between every pair (%s)") % summary))
    link = (torch or {}).get("link") or {}
    if link.get("error"):
        out.append(Check(_("copy bandwidth"), WARN, link["error"]))
    elif link and not link.get("idle"):
        out.append(Check(_("copy bandwidth"), PASS, _("not measured: the GPUs are in use")))
    for m in link.get("h2d") or []:
        g = links.get(m["gpu"], {})
        want = pcie_gbps(g.get("pcie_gen_max"), g.get("pcie_width_max"))
        verdict, frac = bandwidth_verdict(m["gbps"], want)
        out.append(Check(_("host→GPU %d copy") % m["gpu"], verdict, _("%.1f GB/s%s") % (
            m["gbps"], _(" = %d%% of PCIe Gen%s x%s (%.0f GB/s)") % (round(frac * 100), g.get("pcie_gen_max"),
                                                                    g.get("pcie_width_max"), want) if frac else "")))
    by = {(p["a"], p["b"]): p for p in pairs}
    for m in link.get("d2d") or []:
        p = by.get((m["a"], m["b"]), {"a": m["a"], "b": m["b"]})
        want = pair_gbps(p, links) if p.get("path") else None
        verdict, frac = bandwidth_verdict(m["gbps"], want)
        if verdict != PASS:
            out.append(Check(_("GPU %d→%d copy") % (m["a"], m["b"]), verdict, _("%.1f GB/s = %d%% of the %.0f GB/s "
                             "its link (%s) should give") % (m["gbps"], round(frac * 100), want, p.get("path"))))
    ar = link.get("allreduce")
    if ar:
        want = allreduce_gbps(pairs, links, ar["gpus"])
        verdict, frac = bandwidth_verdict(ar["busbw_gbps"], want)
        out.append(Check(_("all-reduce"), verdict, _("%.1f GB/s bus bandwidth over %d GPUs%s") % (
            ar["busbw_gbps"], ar["gpus"], _(" = %d%% of the %.0f GB/s the slowest link should give")
            % (round(frac * 100), want) if frac else "")))
    return out


def run_checks(facts: Facts, cfg: "HostConfig", preset: Optional["Preset"] = None,
               sample_gpus: Optional[Mapping[int, "GpuLive"]] = None,
               smoke_asked: bool = False, gpus_busy: bool = False) -> List[Check]:
    inv = facts.get("inventory") or {}
    torch = facts.get("torch") or {}
    checks = check_gpus(inv, cfg.gpus, getattr(cfg, "expect", None))
    checks += check_torch(inv, torch)
    visible = torch.get("cuda_visible_devices", facts.get("cuda_visible_devices"))
    if inv.get("gpus"):
        checks += check_visible_devices(inv, visible)
    checks += check_smoke(inv, torch, sample_gpus, smoke_asked, gpus_busy)
    checks += check_host(inv, facts, cfg)
    checks += check_interconnect(facts.get("topology"), torch, sample_gpus)
    checks += check_disks(facts, preset)
    checks += check_filesystems(facts)
    checks += check_net(facts, preset)
    if getattr(cfg, "net_check_urls", None) == [] and not facts.get("net"):
        # say where the PyPI / Hugging Face rows went (the demo turns them off)
        checks.append(Check(_("reach PyPI and Hugging Face"), PASS,
                            _("not checked: net_check_urls = [] for this host (remove it to check)")))
    checks.append(Check("tmux", PASS if facts.get("tmux") else WARN,
                        _("installed") if facts.get("tmux") else _("missing: jobs die with the SSH connection")))
    if facts.get("conda_pythons") and not cfg.python:
        checks.append(Check(_("training environment"), PASS, _("using %s; conda envs found: %s (set `python` "
                            "for this host to pick one)") % (torch.get("python_path"), ", ".join(facts["conda_pythons"][:4]))))
    return checks
