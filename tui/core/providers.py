"""Provider presets: what a box is, how it is released, and which paths survive release.

Detected from facts the probe reports (environment of the container's PID 1, marker
directories, DMI vendor strings — never a network call) and overridable in config.
"""

import dataclasses
from typing import List, Optional


@dataclasses.dataclass
class Preset:
    key: str
    name: str
    release_command: Optional[str]
    persistent_paths: List[str]
    ephemeral_paths: List[str]
    note: str = ""

    @property
    def known(self):
        return self.key != "unknown"

    @property
    def wiper(self):
        """Who wipes a disk at release, for sentences: 'AutoDL', or 'the provider'."""
        return self.name if self.known else "the provider"


PRESETS = {
    "autodl": Preset(
        "autodl", "AutoDL", "shutdown -h now",
        persistent_paths=["/root/autodl-fs"],
        ephemeral_paths=["/", "/root/autodl-tmp"],
        note="Shutdown stops GPU billing; the system disk and autodl-tmp are lost when the "
             "instance is released, autodl-fs (network storage) survives."),
    "runpod": Preset(
        "runpod", "RunPod", "runpodctl stop pod $RUNPOD_POD_ID",
        persistent_paths=["/workspace"],
        ephemeral_paths=["/"],
        note="Stopping keeps /workspace (billed as storage); the container disk is wiped."),
    "vast": Preset(
        "vast", "Vast.ai", "vastai stop instance $CONTAINER_ID",
        persistent_paths=[],
        ephemeral_paths=["/"],
        note="A stopped instance still bills its disk; destroying it deletes everything."),
    "lambda": Preset(
        "lambda", "Lambda", None,
        persistent_paths=["/lambda/nfs"],
        ephemeral_paths=["/"],
        note="Shutting down does not stop Lambda billing: terminate the instance in the "
             "console or API."),
    "cloud": Preset(
        "cloud", "Cloud VM", "sudo shutdown -h now",
        persistent_paths=["/"],
        ephemeral_paths=["/mnt", "/tmp"],
        note="A stopped VM stops compute billing; its disks are still billed."),
    "unknown": Preset(
        "unknown", "unknown provider", None, persistent_paths=[], ephemeral_paths=["/"],
        note="Set release_command and persistent_paths for this host in the config."),
}
CLOUD_VENDORS = ("amazon", "google", "microsoft", "alibaba", "tencent", "oracle")


def detect(facts):
    """Which provider a box belongs to, from the probe's `provider` facts. -> preset key."""
    env = facts.get("env") or {}
    paths = set(facts.get("paths") or ())
    if "RUNPOD_POD_ID" in env:
        return "runpod"
    if "VAST_CONTAINERLABEL" in env or ("CONTAINER_ID" in env and "/workspace" not in paths):
        return "vast"
    if "/root/autodl-tmp" in paths or "/root/autodl-fs" in paths or "AutoDLContainerUUID" in env:
        return "autodl"
    if "/lambda/nfs" in paths or "lambda" in (facts.get("dmi_vendor") or "").lower():
        return "lambda"
    vendor = (facts.get("dmi_vendor") or "").lower()
    if any(v in vendor for v in CLOUD_VENDORS):
        return "cloud"
    return "unknown"


def resolve(facts, host_cfg):
    """The preset for a host with config overrides applied."""
    key = host_cfg.provider or detect(facts or {})
    base = PRESETS.get(key, PRESETS["unknown"])
    return dataclasses.replace(
        base,
        release_command=host_cfg.release_command or base.release_command,
        persistent_paths=host_cfg.persistent_paths or base.persistent_paths,
        ephemeral_paths=host_cfg.ephemeral_paths or base.ephemeral_paths,
    )
