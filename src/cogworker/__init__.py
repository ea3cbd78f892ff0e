"""cogworker: background jobs on Redis that never lose a job.

Public API::

    import cogworker

    app = cogworker.App()

    @app.job(queue="default", retry=True)
    def hello(name): ...

    hello.perform_async("world")
"""

from cogworker.__about__ import __version__
from cogworker.app import App
from cogworker.core.current_job import CurrentJob, current_job
from cogworker.core.errors import (
    BrokerError,
    BrokerPermissionError,
    BrokerUnavailableError,
    CogworkerError,
    ConfigurationError,
    JobArgumentError,
    JobCallError,
    JobDefinitionError,
    JobTimeoutError,
    NoCurrentJobError,
    PluginError,
    UnknownJobError,
)
from cogworker.core.job import Job, JobFunction
from cogworker.core.job_options import JobOption
from cogworker.core.markers import hookimpl, hookspec
from cogworker.plugins.batches.handle import BatchHandle, current_batch

__all__ = [
    "App",
    "BatchHandle",
    "BrokerError",
    "BrokerPermissionError",
    "BrokerUnavailableError",
    "CogworkerError",
    "ConfigurationError",
    "CurrentJob",
    "Job",
    "JobArgumentError",
    "JobCallError",
    "JobDefinitionError",
    "JobFunction",
    "JobOption",
    "JobTimeoutError",
    "NoCurrentJobError",
    "PluginError",
    "UnknownJobError",
    "__version__",
    "current_batch",
    "current_job",
    "hookimpl",
    "hookspec",
]
