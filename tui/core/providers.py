"""Provider presets: what a box is, which release actions its provider offers, and per action
what survives, what is wiped, what it bills afterwards and which clock it starts (issue 22).

Detected from facts the probe reports (environment of the container's PID 1, marker
directories, hostname, DMI vendor strings — never a network call) and overridable in config.

Every fact carries the page it comes from in a comment next to it. Where a fact could not be
confirmed from a provider's own page, the comment says so ("UNCONFIRMED").
"""

import dataclasses
import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from tui.core.i18n import N_, _

if TYPE_CHECKING:
    from tui.core.config import HostConfig


@dataclasses.dataclass(frozen=True)
class StoragePrice:
    """What a kept disk costs after the action, as the provider states it."""
    amount: float
    currency: str
    per: str  # "GB-month" or "day"
    what: str  # which disk, e.g. "volume disk"


@dataclasses.dataclass(frozen=True)
class Action:
    key: str  # "stop", "terminate", "destroy", "shutdown", "deallocate", "os-shutdown"
    label: str  # N_() text; shown translated
    command: Optional[str]  # run on the box; None: only the console / an API with the user's key
    api: Optional[str] = None  # the REST/API call that does the same (fallback, or the only way)
    keeps: Tuple[str, ...] = ()  # paths that survive the action
    wipes: Tuple[str, ...] = ()  # paths the action deletes
    bills: str = ""  # N_() text: what the provider keeps billing afterwards
    storage: Tuple[StoragePrice, ...] = ()
    clock: str = ""  # N_() text: a clock the action starts (automatic release, termination)
    clock_days: Optional[int] = None
    irreversible: bool = False
    stops_compute: bool = True  # False: the GPU/VM keeps billing after this action
    warning: str = ""  # N_() text shown before running it


@dataclasses.dataclass
class Preset:
    key: str
    name: str
    release_command: Optional[str]
    persistent_paths: List[str]
    ephemeral_paths: List[str]
    note: str = ""
    actions: Tuple[Action, ...] = ()
    action: Optional[str] = None  # the chosen action's key
    at_zero_balance: str = ""  # N_() text: what the provider does when the balance runs out

    @property
    def known(self) -> bool:
        return self.key != "unknown"

    @property
    def wiper(self) -> str:
        """Who wipes a disk at release, for sentences: 'AutoDL', or 'the provider'."""
        return self.name if self.known else _("the provider")

    @property
    def chosen(self) -> Optional[Action]:
        """The chosen Action, or None for a provider without actions."""
        for a in self.actions:
            if a.key == self.action:
                return a
        return self.actions[0] if self.actions else None

    @property
    def has_choice(self) -> bool:
        return len(self.actions) > 1

    def with_action(self, key: str) -> "Preset":
        """This preset with another of its actions chosen: command, kept and wiped paths follow."""
        for a in self.actions:
            if a.key == key:
                return dataclasses.replace(
                    self, action=a.key, release_command=a.command,
                    persistent_paths=list(a.keeps), ephemeral_paths=list(a.wipes), note=_(a.bills))
        raise KeyError(key)


# ---------------------------------------------------------------------------------------------
# RunPod
# ---------------------------------------------------------------------------------------------
RUNPOD_REST = "https://rest.runpod.io/v1"  # https://docs.runpod.io/api-reference/pods/POST/pods/podId/stop
RUNPOD_STOP = Action(
    "stop", N_("stop"),
    # `runpodctl pod <verb>` is the current CLI form (https://docs.runpod.io/pods/manage-pods.md quick
    # reference lists `runpodctl pod create ...`); `runpodctl stop pod` is the older form
    # (https://docs.runpod.io/runpodctl/reference/runpodctl-stop-pod). runpodctl can fail with an x509 error
    # in minimal images (runpodctl#149, from the issue; UNCONFIRMED here), so the REST call with the
    # pod's own RUNPOD_API_KEY follows.
    command='runpodctl pod stop "$RUNPOD_POD_ID" || curl -fsS -X POST '
            '-H "Authorization: Bearer $RUNPOD_API_KEY" ' + RUNPOD_REST + '/pods/"$RUNPOD_POD_ID"/stop',
    api="POST " + RUNPOD_REST + "/pods/{podId}/stop",  # https://docs.runpod.io/api-reference/pods/POST/pods/podId/stop
    # volume disk at /workspace: "Retained until Pod deleted"; container disk: "Lost on stop/restart";
    # a network volume replaces the volume disk at /workspace and is "Retained independently"
    # (https://docs.runpod.io/pods/storage/types.md)
    keeps=("/workspace",), wipes=("/",),
    bills=N_("the volume disk at /workspace keeps billing at $0.20/GB/month while stopped "
             "(twice the running rate); the container disk is not billed"),
    storage=(StoragePrice(0.20, "USD", "GB-month", "volume disk"),),  # https://docs.runpod.io/pods/storage/types.md
    # "You only pay for the container disk when the pod is running" (https://docs.runpod.io/sdks/graphql/manage-pods)
    # "When your balance is projected to cover less than 10 seconds of remaining runtime, Runpod
    # automatically stops all your Pods ... If your balance is completely depleted, Pods and their
    # associated storage may be deleted." (https://docs.runpod.io/accounts-billing/billing)
    clock=N_("at a zero balance RunPod may delete the stopped pod and its volume disk; "
             "a restart may find no free GPU on the machine"),  # the "zero GPUs" restart: UNCONFIRMED
    warning="",
)
RUNPOD_TERMINATE = Action(
    "terminate", N_("terminate"),
    command='runpodctl pod delete "$RUNPOD_POD_ID" || curl -fsS -X DELETE '
            '-H "Authorization: Bearer $RUNPOD_API_KEY" ' + RUNPOD_REST + '/pods/"$RUNPOD_POD_ID"',
    api="DELETE " + RUNPOD_REST + "/pods/{podId}",  # https://docs.runpod.io/api-reference/pods/DELETE/pods/podId.md
    # volume disk "deleted when the Pod is terminated"; network volume "Retained independently"
    # (https://docs.runpod.io/pods/storage/types.md). A network volume, when attached, is mounted at
    # /workspace; we cannot tell from the box which one it is, so /workspace is listed as wiped.
    keeps=(), wipes=("/", "/workspace"),
    bills=N_("nothing for the pod; a network volume (if any) keeps billing at $0.07/GB/month"),
    storage=(StoragePrice(0.07, "USD", "GB-month", "network volume"),),  # https://docs.runpod.io/pods/storage/types.md
    irreversible=True,
    warning=N_("terminating deletes /workspace unless it is a network volume"),
)

# ---------------------------------------------------------------------------------------------
# Vast.ai
# ---------------------------------------------------------------------------------------------
VAST_REST = "https://console.vast.ai/api/v0"  # https://docs.vast.ai/api/llms.txt ("Base URL")
VAST_STOP = Action(
    "stop", N_("stop"),
    # `vastai stop instance ID`; --api-key is a global option (https://docs.vast.ai/cli/reference/stop-instance.md).
    # CONTAINER_ID / CONTAINER_API_KEY are in PID 1's environment, not in SSH sessions (from the issue;
    # UNCONFIRMED from a Vast page in this session). The REST form PUT /instances/{id}/ {"state": "stopped"}
    # is what vast-cli sends (UNCONFIRMED from a docs page).
    command='vastai stop instance "$CONTAINER_ID" --api-key "$CONTAINER_API_KEY" || curl -fsS -X PUT '
            '-H "Authorization: Bearer $CONTAINER_API_KEY" -H "Content-Type: application/json" '
            "-d '{\"state\": \"stopped\"}' " + VAST_REST + '/instances/"$CONTAINER_ID"/',
    api="PUT " + VAST_REST + "/instances/{id}/ {\"state\": \"stopped\"}",
    # "When an instance is "stopped" all of your data on the instance is preserved ... starting an instance
    # is subject to resource availability" (https://docs.vast.ai/cli/reference/stop-instance.md)
    keeps=("/",), wipes=(),
    # "stopped: Halted — disk charges only" (vast-ai/vast-cli docs, https://github.com/vast-ai/vast-cli);
    # "Stopped instances have no GPU reservation" (https://docs.vast.ai/guides/instances/docker-environment.md)
    bills=N_("the instance's disk keeps billing (storage_cost) while stopped; the GPU is not reserved"),
    clock="",
)
VAST_DESTROY = Action(
    "destroy", N_("destroy"),
    # "Destroy an instance (irreversible, deletes data)" (https://docs.vast.ai/cli/reference/destroy-instance.md)
    command='vastai destroy instance "$CONTAINER_ID" --api-key "$CONTAINER_API_KEY" || curl -fsS -X DELETE '
            '-H "Authorization: Bearer $CONTAINER_API_KEY" ' + VAST_REST + '/instances/"$CONTAINER_ID"/',
    api="DELETE " + VAST_REST + "/instances/{id}/",  # the REST path: UNCONFIRMED from a docs page
    keeps=(), wipes=("/",),
    bills=N_("nothing"),
    irreversible=True,
    warning=N_("destroying deletes every file on the instance"),
)

# ---------------------------------------------------------------------------------------------
# AutoDL (and GPUhub, its international site)
# ---------------------------------------------------------------------------------------------
# System disk `/`, data disk /root/autodl-tmp: "实例关机数据不会丢失"; /root/autodl-fs: network file storage,
# 20 GB free, "超出容量计费" (https://www.autodl.com/docs/env/).
# The 15-day automatic release after a shutdown (wiping all but autodl-fs) is from the issue and a
# third-party profile (https://git.mytsl.cn/csh/playbook/.../remote-gpu-trainer/profiles/autodl.md);
# UNCONFIRMED from autodl.com in this session. Per-second billing: UNCONFIRMED. No-GPU mode (无卡模式)
# for a restart when the GPU is taken: third-party (https://github.com/grenbel/autodl-autogpu/wiki).
AUTODL_SHUTDOWN = Action(
    "shutdown", N_("shutdown (关机)"),
    command="shutdown -h now",  # in-container shutdown stops the instance: UNCONFIRMED from autodl.com
    keeps=("/", "/root/autodl-tmp", "/root/autodl-fs"), wipes=(),
    bills=N_("autodl-fs above its free 20 GB keeps billing; the GPU is not reserved (a restart may "
             "need no-GPU mode)"),
    clock=N_("an instance shut down for 15 days is released: everything but autodl-fs is wiped"),
    clock_days=15,
)
GPUHUB_SHUTDOWN = dataclasses.replace(
    AUTODL_SHUTDOWN,
    # /root/gpuhub-tmp from the issue; the file storage path on GPUhub: UNCONFIRMED (https://gpuhub.com/docs/)
    keeps=("/", "/root/gpuhub-tmp"),
    bills=N_("file storage above its free quota keeps billing; the GPU is not reserved (a restart may "
             "need no-GPU mode)"),
    clock=N_("an instance shut down for 15 days is released: everything but file storage is wiped"),
)

# ---------------------------------------------------------------------------------------------
# Lambda
# ---------------------------------------------------------------------------------------------
LAMBDA_TERMINATE = Action(
    "terminate", N_("terminate"),
    # The terminate call needs the user's Cloud API key, which is not on the instance: no box command.
    command=None,
    # POST /api/v1/instance-operations/terminate {"instance_ids": [...]}
    # (https://github.com/dworznik/lambda-cloud-client/blob/main/docs/TerminateInstanceRequest.md,
    # https://docs.lambda.ai/public-cloud/on-demand/creating-managing-instances/)
    api="POST https://cloud.lambda.ai/api/v1/instance-operations/terminate {\"instance_ids\": [ID]}",
    # persistent filesystems survive terminate (third-party summary of the API,
    # https://glama.ai/mcp/connectors/io.usefulapi/lambda-labs/tools/lambda_terminate_instances);
    # their mount point /lambda/nfs/<name> is from the issue (UNCONFIRMED here)
    keeps=("/lambda/nfs",), wipes=("/",),
    bills=N_("a persistent filesystem keeps billing"),  # its price: UNCONFIRMED
    irreversible=True,
    warning=N_("terminating is irreversible; only a persistent filesystem survives"),
)

# ---------------------------------------------------------------------------------------------
# Cloud VMs
# ---------------------------------------------------------------------------------------------
# AWS: "By default, when you initiate a shutdown from an Amazon EBS backed instance (using a command such
# as shutdown or poweroff), the instance stops. You can change this behavior so that the instance terminates
# instead" (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_ChangingInstanceInitiatedShutdownBehavior.html).
# Terminate: "All data stored on instance store volumes is permanently lost" and EBS volumes set to delete on
# termination go (https://docs.aws.amazon.com/sdk-for-python/v4/reference/clients/ec2/operations/terminate_instances/).
# That a stop loses instance-store data and keeps billing EBS: UNCONFIRMED from a page in this session.
AWS_STOP = Action(
    "stop", N_("stop (in-OS shutdown)"),
    command="sudo shutdown -h now",
    keeps=("/",), wipes=("/mnt",),  # /mnt: where instance store is usually mounted (UNCONFIRMED)
    bills=N_("EBS volumes and Elastic IPs keep billing"),
    warning=N_("if this instance's shutdown behaviour is 'terminate', an in-OS shutdown deletes it "
               "(check: aws ec2 describe-instance-attribute --attribute instanceInitiatedShutdownBehavior)"),
)
# GCP: "Stopped instances do not incur per-minute, virtual machine usage charges while they are stopped, but
# any resources that the virtual machine is using, such as persistent disks and static IP addresses, will
# continue to be charged" (Google's text quoted at https://rdrr.io/github/cloudyr/googleComputeEngineR/man/gce_vm_stop.html).
# That an in-OS shutdown has the same effect as a stop: UNCONFIRMED from a Google page in this session.
GCP_STOP = Action(
    "stop", N_("stop (in-OS shutdown)"),
    command="sudo shutdown -h now",
    keeps=("/",), wipes=(),
    bills=N_("persistent disks and static IPs keep billing"),
)
# Azure: a shutdown from inside the OS leaves the VM "Stopped" with its hardware allocated, still billed;
# only "deallocate" stops compute billing ("Shuts down the virtual machine and releases the compute
# resources. You are not billed for the compute resources",
# https://learn.microsoft.com/en-ie/dotnet/api/azure.resourcemanager.compute.virtualmachineresource.deallocate;
# StoppedDeallocated "releases resources and stops billing" vs Stopped,
# https://learn.microsoft.com/en-us/previous-versions/azure/dn593561(v=azure.11)).
AZURE_DEALLOCATE = Action(
    "deallocate", N_("deallocate"),
    command=None,  # needs Azure credentials (az vm deallocate), usually not on the VM
    api="az vm deallocate -g RESOURCE_GROUP -n VM_NAME  (POST .../virtualMachines/{vm}/deallocate)",
    keeps=("/",), wipes=("/mnt",),  # /mnt: the temporary disk on Linux VMs (UNCONFIRMED here)
    bills=N_("managed disks keep billing"),
)
AZURE_OS_SHUTDOWN = Action(
    "os-shutdown", N_("OS shutdown (keeps billing)"),
    command="sudo shutdown -h now",
    keeps=("/",), wipes=(),
    bills=N_("the VM keeps billing at the full rate: it is stopped, not deallocated"),
    stops_compute=False,
    warning=N_("an in-OS shutdown leaves an Azure VM stopped but allocated: it keeps billing. "
               "Deallocate it in the portal or with az vm deallocate"),
)
# Alibaba ECS pay-as-you-go: without economical mode (StopCharging) a stopped instance keeps billing;
# StoppedMode=KeepCharging "continues to be billed after the instance is stopped"
# (https://www.alibabacloud.com/help/doc-detail/25501.html). Which mode an in-OS shutdown gets: UNCONFIRMED.
ALIBABA_STOP = Action(
    "stop", N_("stop (in-OS shutdown)"),
    command="sudo shutdown -h now",
    keeps=("/",), wipes=(),
    bills=N_("pay-as-you-go: the instance keeps billing unless economical mode (no fees for stopped "
             "instances) is on; disks keep billing"),
    warning=N_("on Alibaba Cloud pay-as-you-go a stopped instance keeps billing unless 'no fees for "
               "stopped instances' (economical mode) is on"),
)
CLOUD_STOP = Action(
    "stop", N_("stop (in-OS shutdown)"),
    command="sudo shutdown -h now",
    keeps=("/",), wipes=("/mnt", "/tmp"),
    bills=N_("disks keep billing; check in the console that compute billing stopped"),
)


def _preset(key: str, name: str, actions: Sequence[Action], note: str = "", at_zero: str = "") -> Preset:
    a = actions[0]
    return Preset(key, name, a.command, list(a.keeps), list(a.wipes), note or a.bills, tuple(actions),
                  a.key, at_zero)


PRESETS = {
    "autodl": _preset("autodl", "AutoDL", [AUTODL_SHUTDOWN],
                      at_zero=N_("AutoDL shuts the instance down when the balance is exhausted")),  # UNCONFIRMED
    "gpuhub": _preset("gpuhub", "GPUhub", [GPUHUB_SHUTDOWN]),
    "runpod": _preset("runpod", "RunPod", [RUNPOD_STOP, RUNPOD_TERMINATE],
                      # https://docs.runpod.io/accounts-billing/billing ("Low balance behavior")
                      at_zero=N_("RunPod stops all pods when the balance covers less than 10 seconds; "
                                 "at zero it may delete them and their storage")),
    "vast": _preset("vast", "Vast.ai", [VAST_STOP, VAST_DESTROY],
                    at_zero=N_("Vast.ai stops instances when the credit runs out")),  # UNCONFIRMED
    "lambda": _preset("lambda", "Lambda", [LAMBDA_TERMINATE],
                      note=N_("Shutting down does not stop Lambda billing: terminate the instance in the "
                              "console or API.")),  # UNCONFIRMED from docs.lambda.ai
    "aws": _preset("aws", "AWS EC2", [AWS_STOP]),
    "gcp": _preset("gcp", "Google Compute Engine", [GCP_STOP]),
    # deallocate first: the default must be the action that stops billing
    "azure": _preset("azure", "Azure", [AZURE_DEALLOCATE, AZURE_OS_SHUTDOWN]),
    "alibaba": _preset("alibaba", "Alibaba Cloud ECS", [ALIBABA_STOP]),
    "cloud": _preset("cloud", "Cloud VM", [CLOUD_STOP]),
    "unknown": Preset(
        "unknown", "unknown provider", None, persistent_paths=[], ephemeral_paths=["/"],
        note=N_("Set release_command and persistent_paths for this host in the config.")),
}
# DMI sys_vendor substrings -> preset key; ordered, first match wins
CLOUD_VENDORS = (("amazon", "aws"), ("google", "gcp"), ("microsoft", "azure"), ("alibaba", "alibaba"),
                 ("tencent", "cloud"), ("oracle", "cloud"))


def detect(facts: Mapping[str, Any]) -> str:
    """Which provider a box belongs to, from the probe's `provider` facts. -> preset key."""
    env = facts.get("env") or {}
    paths = set(facts.get("paths") or ())
    hostname = (facts.get("hostname") or "").lower()
    vendor = (facts.get("dmi_vendor") or "").lower()
    if "RUNPOD_POD_ID" in env:
        return "runpod"
    # Vast images do have /workspace: PID 1's environment decides, whatever the paths
    if "VAST_CONTAINERLABEL" in env or "CONTAINER_API_KEY" in env or "VAST_TCP_PORT_22" in env:
        return "vast"
    if "/root/gpuhub-tmp" in paths:
        return "gpuhub"
    if ("/root/autodl-tmp" in paths or "/root/autodl-fs" in paths or "AutoDLContainerUUID" in env
            or hostname.startswith("autodl-container-")):
        return "autodl"
    if "CONTAINER_ID" in env and "/workspace" not in paths:
        return "vast"  # an older Vast image without the label: CONTAINER_ID alone, no RunPod marker
    if "/lambda/nfs" in paths or "lambda" in vendor:
        return "lambda"
    for needle, key in CLOUD_VENDORS:
        if needle in vendor:
            return key
    return "unknown"


def resolve(facts: Optional[Mapping[str, Any]], host_cfg: "HostConfig", action: Optional[str] = None) -> Preset:
    """The preset for a host with config overrides applied, its chosen action applied first.
    `action` (or host_cfg.release_action) picks one of the provider's actions; unknown keys keep the default."""
    key = host_cfg.provider or detect(facts or {})
    base = PRESETS.get(key, PRESETS["unknown"])
    chosen = action or getattr(host_cfg, "release_action", None)
    if chosen and any(a.key == chosen for a in base.actions):
        base = base.with_action(chosen)
    return dataclasses.replace(
        base,
        release_command=host_cfg.release_command or base.release_command,
        persistent_paths=host_cfg.persistent_paths or base.persistent_paths,
        ephemeral_paths=host_cfg.ephemeral_paths or base.ephemeral_paths,
    )


def release_warning(preset: Preset, facts: Optional[Mapping[str, Any]] = None) -> Optional[str]:
    """A warning to show before any release of this box, or None.

    Azure: an in-OS shutdown keeps billing. AWS: an in-OS shutdown terminates the instance when its
    shutdown behaviour is 'terminate' (facts['shutdown_behavior'] when the probe could read it).
    Any action that does not stop compute, or is irreversible, warns too."""
    a = preset.chosen
    if a is None:
        return None
    facts = facts or {}
    if preset.key == "aws" and a.command and facts.get("shutdown_behavior") == "terminate":
        return _("this instance's shutdown behaviour is 'terminate': an in-OS shutdown DELETES it")
    if not a.stops_compute or a.irreversible or preset.key in ("aws", "alibaba"):
        return _(a.warning) if a.warning else None
    if preset.key == "azure":  # deallocate chosen: nothing runs on the box, say why
        return _("an in-OS shutdown keeps an Azure VM billing: deallocate it in the portal or with "
                 "az vm deallocate")
    return None


def after_release(preset: Preset) -> str:
    """One sentence for the billing panel: what the chosen action keeps billing, and its clock."""
    a = preset.chosen
    if a is None and preset.key == "unknown" and preset.release_command:
        # the release command is set (the note asks for it): say only what is still unknown
        return _("what is kept and billed after release is unknown: set provider in the config")
    if a is None:
        return _(preset.note) if preset.note else ""
    parts = [_(a.bills)] if a.bills else []
    if a.clock:
        parts.append(_(a.clock))
    return "; ".join(parts)


def balance_runs_out(balance: Optional[float], spend_per_hour: Optional[float], now: datetime.datetime,
                     at_zero: str = "") -> Optional[Dict[str, Any]]:
    """When a prepaid balance reaches zero at the current spend. -> dict or None.

    `now` is an aware or naive datetime; returns {"at": datetime, "hours": float, "hhmm": "HH:MM",
    "then": at_zero} or None when nothing is being spent (or nothing is known)."""
    if balance is None or not spend_per_hour or spend_per_hour <= 0:
        return None
    hours = max(0.0, float(balance)) / float(spend_per_hour)
    if hours > 24 * 365:
        return None  # years away: no useful clock
    at = now + datetime.timedelta(hours=hours)
    return {"at": at, "hours": hours, "hhmm": at.strftime("%H:%M"),
            "date": at.strftime("%Y-%m-%d"), "then": at_zero}


def action_lines(preset: Preset) -> List[str]:
    """The chosen action's facts as short lines (checklist details, status): how, keeps, wipes, bills, clock."""
    a = preset.chosen
    if a is None:
        return []
    out = [_("release action: %s") % _(a.label)
           + (_(" (other choices: %s)") % ", ".join(_(b.label) for b in preset.actions if b is not a)
              if preset.has_choice else "")]
    if preset.release_command:
        out.append(_("runs: %s") % preset.release_command)
    elif a.api:
        out.append(_("in the console or API: %s") % a.api)
    out.append(_("keeps: %s") % (", ".join(preset.persistent_paths) or _("nothing")))
    out.append(_("wipes: %s") % (", ".join(preset.ephemeral_paths) or _("nothing")))
    if a.bills:
        out.append(_("bills afterwards: %s") % _(a.bills))
    if a.clock:
        out.append(_("clock: %s") % _(a.clock))
    return out


def price_source(api_result: Optional[Mapping[str, Any]],
                 typed_rate: Optional[float]) -> Tuple[Optional[float], Optional[str], Optional[str]]:
    """Which hourly rate the billing clock uses, and where it came from. -> (rate, source, notice).

    The provider's own figure (read on the box, issue 22) wins; without it the typed rate (`b`),
    with a notice said once when the provider could not be asked."""
    api_result = api_result or {}
    rate = api_result.get("rate_per_hour")
    if api_result.get("ok") and rate is not None:
        return rate, api_result.get("source") or _("provider API"), None
    notice = None
    if api_result.get("reason") and api_result.get("provider"):
        notice = _("could not read the price from the provider (%s): using the typed rate") % api_result["reason"]
    if typed_rate is not None:
        return typed_rate, _("typed rate"), notice
    return None, None, notice


# The README's provider table (issue 22): generated from PRESETS so it cannot drift from the code.
TABLE_HEAD = (N_("Provider"), N_("Action"), N_("Command on the box (or API)"), N_("Keeps"), N_("Wipes"),
              N_("Bills afterwards"), N_("Clock"))
TABLE_ORDER = ("autodl", "gpuhub", "runpod", "vast", "lambda", "aws", "gcp", "azure", "alibaba")


def provider_table(lang: str = "en") -> str:
    """Markdown: action -> command -> keeps -> wipes -> bills -> clock, per provider, in `lang`."""
    from tui.core.i18n import translations_for
    tr = translations_for(lang).gettext

    def cell(text: Optional[str]) -> str:
        return (text or "—").replace("|", "\\|").replace("\n", " ")
    rows = ["| " + " | ".join(tr(h) for h in TABLE_HEAD) + " |", "|" + "---|" * len(TABLE_HEAD)]
    for key in TABLE_ORDER:
        p = PRESETS[key]
        for a in p.actions:
            how = "`%s`" % a.command.replace("|", "\\|") if a.command else (tr("in the console or API: %s") % a.api)
            warn = (" ⚠ " + tr(a.warning)) if a.warning and not a.stops_compute else ""
            rows.append("| " + " | ".join([
                cell(p.name), cell(tr(a.label)), how, cell(", ".join(a.keeps) or tr("nothing")),
                cell(", ".join(a.wipes) or tr("nothing")), cell(tr(a.bills) + warn), cell(tr(a.clock) if a.clock else "")
            ]) + " |")
    return "\n".join(rows) + "\n"


PROVIDER_DOCS = {"en": "docs/providers.md", "zh": "docs/providers.zh-CN.md"}
DOC_INTRO = {
    "en": "# Release actions per provider\n\nGenerated from `tui/core/providers.py` (`provider_table`); "
          "the sources of every fact are in the comments there.\n\n",
    "zh": "# 各服务商的释放方式\n\n由 `tui/core/providers.py`（`provider_table`）生成；每条事实的来源见该文件中的注释。\n\n",
}


def provider_doc(lang: str) -> str:
    return DOC_INTRO[lang] + provider_table(lang)


README_FILES = {"en": "README.md", "zh": "README.zh-CN.md"}
README_BEGIN, README_END = "<!-- provider-table:begin", "<!-- provider-table:end -->"


def with_readme_table(text: str, lang: str) -> str:
    """`text` (a README) with the block between its provider-table markers replaced by the table."""
    head, sep, rest = text.partition(README_BEGIN)
    marker, _nl, rest = rest.partition("\n")
    _old, sep2, tail = rest.partition(README_END)
    if not sep or not sep2:
        raise ValueError("no provider-table markers")
    return head + README_BEGIN + marker + "\n\n" + provider_table(lang) + "\n" + README_END + tail


if __name__ == "__main__":  # python -m tui.core.providers: rewrite docs/providers*.md
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for lang, rel in PROVIDER_DOCS.items():
        os.makedirs(os.path.join(root, "docs"), exist_ok=True)
        with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
            f.write(provider_doc(lang))
        path = os.path.join(root, README_FILES[lang])
        with open(path, encoding="utf-8") as f:
            text = with_readme_table(f.read(), lang)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
