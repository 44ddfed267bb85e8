"""A simulated long-running-job provider over loopback HTTP, with per-job fault injection.

It speaks the API of the reference article (create, status, cancel, result,
list by client reference, signed webhooks) and can misbehave in each way a
real provider does, one job at a time, so one run can mix faults. It powers
jobtrail's demo, integration tests and benchmarks.
"""

from __future__ import annotations

from jobtrail.simulator.faults import FAULT_NAMES, FaultError, Faults
from jobtrail.simulator.records import CallRecord, SimJob
from jobtrail.simulator.serve import serve_forever
from jobtrail.simulator.server import Simulator
from jobtrail.simulator.thread import SimulatorThread
from jobtrail.simulator.webhooks import WebhookSigner, new_webhook_secret

__all__ = [
    "FAULT_NAMES",
    "CallRecord",
    "FaultError",
    "Faults",
    "SimJob",
    "Simulator",
    "SimulatorThread",
    "WebhookSigner",
    "new_webhook_secret",
    "serve_forever",
]
