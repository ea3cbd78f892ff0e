"""The names a workflow leaves in payloads: the step field and the plugin's two jobs.

Apart from :mod:`cogworker.workflows` so that the ``workflows`` plugin's hooks (its
``cogworker_configure`` registers the jobs, its middleware looks for the field on every
job) need none of the workflow machinery: a process that only pushes never imports it.
"""

from __future__ import annotations

MARKER = "workflow"
"""The payload field that makes a job a workflow step."""

GROUP_LAUNCH = "cogworker.workflows.start_group"
"""The job that starts a group inside a chain (registered by the workflows plugin)."""

CHORD_UNLOCK = "cogworker.workflows.chord_unlock"
"""The job the batch of a chord runs on success (registered by the workflows plugin)."""
