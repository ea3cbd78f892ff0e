"""Every Redis key name cogworker uses, built from one namespace.

With the default namespace ``cogworker`` the names are exactly the original Ruby gem's
(``cogworker:queue:default``, ``periodic:schedule``...), so a Python fleet and a Ruby fleet
can share one Redis. Any other namespace prefixes the cron keys too (``myapp:periodic:...``)
so that two namespaces on one server never see each other.

Cluster mode wraps the namespace in a hash tag (``{cogworker}:queue:default``): every key then
lives in one hash slot, so every Lua script may touch any of them. The price is that one
cogworker namespace is served by one cluster shard; run several namespaces to spread load.
``docs/reference/redis-keys.md`` documents the layout.
"""

from __future__ import annotations

DEFAULT_NAMESPACE = "cogworker"


class KeySchema:
    """Builds key names for one namespace. Immutable, compared and hashed by value.

    A plain class rather than a dataclass: this module is on a first push's path, where
    creating the dataclass cost most of a millisecond.
    """

    __slots__ = ("cluster", "namespace", "periodic_prefix", "prefix")
    namespace: str
    cluster: bool
    prefix: str
    periodic_prefix: str

    def __init__(self, namespace: str = DEFAULT_NAMESPACE, cluster: bool = False) -> None:
        base = f"{{{namespace}}}" if cluster else namespace
        if namespace == DEFAULT_NAMESPACE and not cluster:
            periodic = "periodic"
        else:
            periodic = f"{base}:periodic"
        for name, value in (("namespace", namespace), ("cluster", cluster), ("prefix", base),
                            ("periodic_prefix", periodic)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a KeySchema is immutable: cannot assign {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a KeySchema is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not KeySchema:
            return NotImplemented
        return (self.namespace, self.cluster) == (other.namespace, other.cluster)

    def __hash__(self) -> int:
        return hash((self.namespace, self.cluster))

    def __repr__(self) -> str:
        return (f"KeySchema(namespace={self.namespace!r}, cluster={self.cluster!r}, "
                f"prefix={self.prefix!r}, periodic_prefix={self.periodic_prefix!r})")

    def __reduce__(self) -> tuple[type[KeySchema], tuple[str, bool]]:
        return KeySchema, (self.namespace, self.cluster)

    def _k(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    # queues -------------------------------------------------------------------------------
    @property
    def queue_prefix(self) -> str:
        return self._k("queue") + ":"

    def queue(self, name: str) -> str:
        return self._k("queue", name)

    def queue_name(self, key: str) -> str:
        """The queue name inside a queue key (inverse of :meth:`queue`)."""
        return key[len(self.queue_prefix) :] if key.startswith(self.queue_prefix) else key

    @property
    def queues(self) -> str:
        return self._k("queues")

    @property
    def paused_queues(self) -> str:
        return self._k("paused_queues")

    @property
    def live_queues(self) -> str:
        return self._k("live_queues")

    # sorted sets --------------------------------------------------------------------------
    @property
    def schedule(self) -> str:
        return self._k("schedule")

    @property
    def retry(self) -> str:
        return self._k("retry")

    @property
    def dead(self) -> str:
        return self._k("dead")

    def sorted_set(self, name: str) -> str:
        """``schedule``, ``retry`` or ``dead`` by name."""
        if name not in ("schedule", "retry", "dead"):
            raise ValueError(f"no sorted set named {name!r}; use schedule, retry or dead")
        return self._k(name)

    # stats --------------------------------------------------------------------------------
    @property
    def stats_processed(self) -> str:
        return self._k("stats", "processed")

    @property
    def stats_failed(self) -> str:
        return self._k("stats", "failed")

    def throughput(self, hour: int) -> str:
        return self._k("throughput", str(hour))

    # metrics plugin -----------------------------------------------------------------------
    def metrics_bucket(self, step: int, number: int) -> str:
        """The hash of one minute (``step`` 60) or hour (3600) of per-series metrics:
        ``metrics:m:<epoch minute>`` / ``metrics:h:<epoch hour>``."""
        return self._k("metrics", "m" if step == 60 else "h", str(number))

    @property
    def metrics_totals(self) -> str:
        """The hash of per-series running totals (and recovered orphans)."""
        return self._k("metrics", "totals")

    @property
    def metrics_rank(self) -> str:
        """Sorted set: series (``class<US>queue``) scored by their runs ever."""
        return self._k("metrics", "rank")

    @property
    def metrics_names(self) -> str:
        """Sorted set: the same series, all scored 0, for a lexical range by class."""
        return self._k("metrics", "names")

    # processes ----------------------------------------------------------------------------
    @property
    def processes(self) -> str:
        return self._k("processes")

    def process(self, identity: str) -> str:
        return self._k("process", identity)

    def workers(self, identity: str) -> str:
        return self._k("workers", identity)

    def signal(self, identity: str) -> str:
        return self._k("signal", identity)

    @property
    def wakeup(self) -> str:
        """Pub/sub channel a client may ping after a push (pickup latency)."""
        return self._k("wakeup")

    # reliable fetch -----------------------------------------------------------------------
    @property
    def inprogress_prefix(self) -> str:
        return self._k("inprogress") + ":"

    def inprogress(self, identity: str) -> str:
        return self._k("inprogress", identity)

    @property
    def inprogress_identities(self) -> str:
        return self._k("inprogress_identities")

    @property
    def last_beat(self) -> str:
        return self._k("last_beat")

    @property
    def repeat_orphans(self) -> str:
        return self._k("repeat_orphans")

    @property
    def orphanings_prefix(self) -> str:
        return self._k("orphanings") + ":"

    def orphanings(self, jid: str) -> str:
        return self._k("orphanings", jid)

    @property
    def unsettled(self) -> str:
        return self._k("unsettled")

    @property
    def unsettled_quarantine(self) -> str:
        return self._k("quarantine", self.unsettled, "records")

    def quarantine(self, key: str, stamp_ms: int, suffix: str) -> str:
        return self._k("quarantine", key, str(stamp_ms), suffix)

    # locks --------------------------------------------------------------------------------
    def lock(self, name: str) -> str:
        """The key of the lock named ``name`` (see :mod:`cogworker.core.broker.locks`):
        ``<prefix>:<name>``, except that a ``periodic:`` name lives under the cron keys'
        prefix, where the original keeps its cron locks (``periodic:running:<pjid>`` in the
        default namespace). So ``lock("unique:<digest>")`` is :meth:`unique` and
        ``lock("periodic:running:<pjid>")`` is :meth:`periodic_running`."""
        if not name:
            raise ValueError("a lock name must not be empty")
        head, separator, rest = name.partition(":")
        if head == "periodic" and separator:
            return f"{self.periodic_prefix}:{rest}"
        return self._k(name)

    # unique jobs --------------------------------------------------------------------------
    @property
    def unique_prefix(self) -> str:
        return self._k("unique") + ":"

    def unique(self, digest: str) -> str:
        return self._k("unique", digest)

    def job_attempts(self, jid: str) -> str:
        return self._k("job_attempts", jid)

    # limiters (see cogworker.redis.limits_store) -------------------------------------------
    @property
    def limiters(self) -> str:
        """The registry of limiters: name -> spec JSON."""
        return self._k("limiters")

    def limiter(self, name: str, state: str) -> str:
        """One limiter's state; ``state`` is its kind's (``concurrent``, ``fixed``,
        ``sliding``, ``bucket``), so a limiter re-declared as another kind starts afresh."""
        return self._k("limiter", name, state)

    @property
    def limiter_counts(self) -> str:
        """Admissions and refusals of every limiter: ``<name>|acquired``, ``<name>|over``."""
        return self._k("limiter_counts")

    def limiter_holds(self, identity: str) -> str:
        """The concurrent-limiter holders of one process, to release when it is dead."""
        return self._k("limiter_holds", identity)

    # job status ---------------------------------------------------------------------------
    def status_bucket(self, bucket: int) -> str:
        """The hash of the statuses written in one time bucket (jid -> JSON record)."""
        return self._k("status", str(bucket))
    # cancellations (see cogworker.redis.cancel_store) ---------------------------------
    @property
    def cancellations(self) -> str:
        """Sorted set: cancelled jids scored by when their cancellation expires."""
        return self._k("cancelled")

    @property
    def cancel_channel(self) -> str:
        """Pub/sub channel announcing each cancelled jid to running workers."""
        return self._k("cancel")
    # workflows (see cogworker.redis.results_store) ------------------------------------
    def result(self, jid: str) -> str:
        """The stored result (JSON text) of the workflow step ``jid``."""
        return self._k("result", jid)

    def workflow(self, workflow_id: str) -> str:
        """The record (hash) of workflow ``workflow_id``."""
        return self._k("workflow", workflow_id)

    # batches (see cogworker.redis.batch_store) -----------------------------------------
    def batch(self, bid: str) -> str:
        """The hash of one batch (spec, callback templates, fired flags)."""
        return self._k("batch", bid)

    def batch_part(self, bid: str, part: str) -> str:
        """One of a batch's member sets: ``members``, ``unrun``, ``pending``, ``failed``,
        ``dead``, ``ran``, ``ok``."""
        return self._k("batch", bid, part)

    @property
    def batches(self) -> str:
        """Sorted set: every batch's bid by its creation time."""
        return self._k("batches")

    @property
    def batches_cancelled(self) -> str:
        """Sorted set: cancelled bids by when they were cancelled."""
        return self._k("batches", "cancelled")

    # run history (see cogworker.redis.history_store) ------------------------------------
    @property
    def history_runs(self) -> str:
        return self._k("history", "runs")

    @property
    def history_index(self) -> str:
        return self._k("history", "index")

    def history_daily(self, day: str) -> str:
        """Runs per UTC day ``YYYY-MM-DD`` (the Ruby gem's key)."""
        return self._k("history", "daily", day)

    # periodic -----------------------------------------------------------------------------
    @property
    def periodic_schedule(self) -> str:
        return f"{self.periodic_prefix}:schedule"

    @property
    def periodic_disabled(self) -> str:
        return f"{self.periodic_prefix}:disabled"

    def periodic_last_slot(self, pjid: str) -> str:
        return f"{self.periodic_prefix}:last_slot:{pjid}"

    def periodic_slot_lock(self, pjid: str, slot: int) -> str:
        return f"{self.periodic_prefix}:lock:{pjid}:{slot}"

    @property
    def periodic_running_prefix(self) -> str:
        return f"{self.periodic_prefix}:running:"

    def periodic_running(self, pjid: str) -> str:
        return f"{self.periodic_prefix}:running:{pjid}"
