"""Errors that carry a reason and a location a user can act on, and `Reason`: the one
vocabulary of machine-readable reasons in results, inventories, status, metrics and logs."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """Short CamelCase words; JSON, inventories and metric labels carry their text."""

    ERROR = "Error"
    INTERNAL_ERROR = "InternalError"
    INVALID_CONFIG = "InvalidConfig"
    INVALID_GATE = "InvalidGate"
    GATE_MATCHES_NOTHING = "GateMatchesNothing"
    SOURCE_FAILED = "SourceFailed"
    RENDER_FAILED = "RenderFailed"
    NOT_PLACED = "NotPlaced"  # a bundle reaches no member cluster: nothing places it
    DUPLICATE_OBJECT = "DuplicateObject"
    NOT_OWNED = "NotOwned"
    DUPLICATE_BUNDLE = "DuplicateBundle"
    POLICY_TAKEOVER = "PolicyTakeover"
    OTHER_REPO = "OtherRepo"  # the instance's records name another repo: nothing is written
    OTHER_INSTANCE = "OtherInstance"  # an object another gitgate instance labels as its own
    OUTSIDE_TENANT = "OutsideTenant"  # a tenant's bundle writes or places beyond its rules
    UNVERIFIED = "Unverified"  # --verify-commits: the commit is not signed by an allowed key
    UNTRUSTED_GATES = "UntrustedGates"  # a freeze file changed without a gate signer's signature
    FROZEN = "Frozen"  # a write or prune of an object live in a bundle a freeze holds
    UNKNOWN_KIND = "UnknownKind"
    TOOL_MISSING = "ToolMissing"
    CHART_NOT_ALLOWED = "ChartNotAllowed"  # a chart's repository is not in the allow-list
    CHART_NOT_LOCKED = "ChartNotLocked"  # a fetched chart with no (or a stale) lock entry
    CHART_FETCH_FAILED = "ChartFetchFailed"  # unreachable, too large, or not the locked digest
    CHART_UNVERIFIED = "ChartUnverified"  # verify: true, and its provenance does not verify
    GIT_FAILED = "GitFailed"
    APPLIED = "Applied"
    HELD = "Held"
    APPLY_FAILED = "ApplyFailed"
    IMMUTABLE_FIELD = "ImmutableField"
    NAMESPACE_TERMINATING = "NamespaceTerminating"
    READ_FAILED = "ReadFailed"
    LIST_FAILED = "ListFailed"
    DELETE_FAILED = "DeleteFailed"
    API_UNREACHABLE = "ApiUnreachable"
    API_TIMEOUT = "ApiTimeout"
    API_REDIRECT = "ApiRedirect"  # the API server answered a redirect, which gitgate never follows
    API_ANSWER_TOO_LARGE = "ApiAnswerTooLarge"  # an answer, watch event or header past its cap
    API_ANSWER_REFUSED = "ApiAnswerRefused"  # an answer in an encoding gitgate did not ask for
    API_UNAUTHORIZED = "Unauthorized"
    API_FORBIDDEN = "Forbidden"
    DEPENDENCY_NOT_READY = "DependencyNotReady"
    SUSPENSION_NOT_OBSERVED = "SuspensionNotObserved"
    PRUNE_FAILED = "PruneFailed"
    HOOK_FAILED = "HookFailed"
    INVENTORY_FAILED = "InventoryWriteFailed"
    PRUNE_BLOCKED = "PruneBlocked"
    FENCED = "Fenced"  # a replica's Lease lapsed (or its shard moved) while it was writing
    INTERRUPTED = "Interrupted"
    PASS_FAILED = "PassFailed"
    FAILED = "Failed"
    # what a Bundle's conditions and events say besides the above
    SUSPENDED = "Suspended"
    ROLLOUT_HALTED = "RolloutHalted"
    ROLLED_BACK = "RolledBack"  # onFailure: rollback committed a rollback
    WAVE_RELEASED = "WaveReleased"
    PROGRESSING = "Progressing"
    PRUNED = "Pruned"
    LIFTED = "Lifted"
    APPROVED = "Approved"  # an approval lets a bundle's content through a gate still in force


class Condition(StrEnum):
    """The condition types of a Bundle (see `apply.conditions`)."""

    READY = "Ready"
    HELD = "Held"
    SUSPENDED = "Suspended"
    PROGRESSING = "Progressing"
    RECONCILING = "Reconciling"  # kstatus's name for Progressing
    STALLED = "Stalled"


class GitgateError(Exception):
    """Base class: `reason` is a short CamelCase word, the message names file or object."""

    reason: Reason = Reason.ERROR

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line


class ConfigError(GitgateError):
    reason: Reason = Reason.INVALID_CONFIG


class SourceError(GitgateError):
    reason: Reason = Reason.SOURCE_FAILED


class RenderError(GitgateError):
    reason: Reason = Reason.RENDER_FAILED


class ChartError(GitgateError):
    """A chart that cannot be fetched as locked: `reason` says whether it is not allowed, not
    locked, or could not be fetched (or was not what the lock says)."""

    def __init__(self, message: str, *, reason: Reason, file: str | None = None,
                 line: int | None = None):
        super().__init__(message, file=file, line=line)
        self.reason = reason


class OtherRepo(GitgateError):
    """The instance belongs to another repo (its records name it)."""

    reason: Reason = Reason.OTHER_REPO


class OtherInstance(GitgateError):
    """An object another gitgate instance labels as its own."""

    reason: Reason = Reason.OTHER_INSTANCE


class FrozenObject(GitgateError):
    """An object to write is live in another bundle a freeze holds, by its live label."""

    reason: Reason = Reason.FROZEN


class ToolMissing(GitgateError):
    reason: Reason = Reason.TOOL_MISSING


class GateSpecError(ConfigError):
    """A gate that cannot be used; `path` is where in the document (for the line number)."""

    reason: Reason = Reason.INVALID_GATE

    def __init__(self, message: str, path: tuple[str, ...] = ()):
        super().__init__(message)
        self.path = path


class StillHeld(GitgateError):
    """A resume that lifted nothing: what holds the bundles was not its to lift."""

    reason: Reason = Reason.HELD


class GitOpError(GitgateError):
    reason: Reason = Reason.GIT_FAILED


class KubeError(GitgateError):
    """An API error that names the object; `status` and `api_reason` come from the server,
    `conflict_with` names the field managers of a 409, `immutable_fields` the fields a 422
    refused to change."""

    def __init__(self, message: str, *, status: int = 0, api_reason: str = "",
                 conflict_with: tuple[str, ...] = (), reason: Reason = Reason.APPLY_FAILED,
                 immutable_fields: tuple[str, ...] = ()):
        super().__init__(message)
        self.reason = reason
        self.status = status
        self.api_reason = api_reason
        self.conflict_with = conflict_with
        self.immutable_fields = immutable_fields


class ContinueExpired(KubeError):
    """A paged list cannot go on: the API server no longer knows the snapshot its continue
    token names (410 Expired, after etcd compacted it). List again from the start."""
