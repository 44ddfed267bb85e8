"""The exception tree. Every error says what happened and what the user can do next.

    JobtrailError
    ├── InvalidInput          bad arguments, request bodies, durations, provider files
    │   └── ProviderConfigError
    ├── NotFound              no operation with that id
    ├── ProviderMissing       an operation's code provider is not installed in this process
    ├── KeyConflict           same operation key, different request
    ├── TransitionRefused     a state change without its evidence
    ├── ActionRefused         a human/agent action that does not fit the operation's state
    │   └── NotPermitted      the action policy does not let this actor take it
    ├── LostOwnership         a worker's lease was taken over (fencing number moved on)
    ├── ConcurrentUpdate      someone else changed the operation first; reload and retry
    ├── TransportUnsafe       the HTTP library would re-send requests on its own; none is sent
    ├── StoreError            the ledger database could not be opened or migrated
    └── ResultError           a stored result cannot be written or read
        ├── ResultTooLarge    past the result store's size cap
        └── ResultCorrupted   the stored bytes no longer match their content hash
    ClientClosed              a jobtrail.Client used before opening or after closing
    WaitTimedOut              Client.wait gave up first (also a TimeoutError)
    CredentialMissing         Client.wait: a provider's credential is not set, nothing is sent

    MissingCredentialWarning  (a UserWarning) Client.submit: the same, said at submit

Foreign errors (sqlite3, psycopg, aiohttp) are translated once, where they are caught.
"""

from __future__ import annotations


class JobtrailError(Exception):
    """Root of every error jobtrail raises on purpose."""


class InvalidInput(JobtrailError):
    """The input cannot be used as given."""


class ProviderConfigError(InvalidInput):
    """A provider file is missing, unreadable or does not match the schema."""


class NotFound(JobtrailError):
    """No such operation."""


class TransportUnsafe(JobtrailError):
    """The installed HTTP library cannot be kept from re-sending a request on its own
    (providers/transport.py): jobtrail sends nothing rather than let the wire and the ledger
    disagree."""


class ProviderMissing(JobtrailError):
    """The code provider an operation was submitted to is not available here: jobtrail never
    drives such an operation with another provider."""


class KeyConflict(JobtrailError):
    """An operation key was reused with a different request."""


class TransitionRefused(JobtrailError):
    """A transition is not in the table, or lacks the evidence the table requires."""


class ActionRefused(JobtrailError):
    """The action does not fit the operation's current state."""


class NotPermitted(ActionRefused):
    """The action policy (jobtrail.ledger.policy) does not let this actor take this action."""


class LostOwnership(JobtrailError):
    """The lease was taken over; this worker may no longer write for the operation."""


class ConcurrentUpdate(JobtrailError):
    """The operation changed under us; the caller reloads and decides again."""


class StoreError(JobtrailError):
    """The ledger database cannot be used."""


class LedgerBusy(StoreError):
    """Another process held the ledger's write lock longer than the store waits for it (a
    long transaction elsewhere: a backup, a `sqlite3` shell, a stuck process). Nothing was
    written; the same write may be tried again."""


# -- result stores (src/jobtrail/results) --------------------------------------------------


class ResultError(JobtrailError):
    """A result cannot be stored in, or read back from, the result store."""


class ResultTooLarge(ResultError):
    """The result is larger than the result store accepts."""


class ResultCorrupted(ResultError):
    """The stored bytes do not hash to the digest they were stored under."""


# -- the Python client (src/jobtrail/client) -----------------------------------------------


class ClientClosed(JobtrailError):
    """A client was used before it was opened, or after it was closed."""


class WaitTimedOut(JobtrailError, TimeoutError):
    """`wait` gave up before the operation settled; the operation itself carries on."""


class CredentialMissing(JobtrailError):
    """`wait` on an operation nothing can be sent for: its provider's credential variable
    is not set where the worker runs. The operation waits (until its create deadline)."""


class MissingCredentialWarning(UserWarning):
    """`Client.submit` recorded an operation whose provider's credential variable is not set
    here: nothing can be sent for it until it is."""
