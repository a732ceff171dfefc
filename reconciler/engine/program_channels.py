"""Each inline program's gRPC channels to its ``pulumi`` get connections of their own.

The engine runs the Service program inline (:mod:`.handle`): every ``up``, ``preview`` and
``refresh`` runs it in this process, and the Pulumi SDK opens a gRPC channel to that ``pulumi``'s
resource monitor and engine (``127.0.0.1:<port>``), never closed. gRPC shares connections
("subchannels") among all channels of a process with the same address and arguments. Once a
``pulumi`` has gone (it finished, or was killed mid-``up``), an old channel that is asked again
keeps its subchannel reconnecting to a dead port with backoff; when a later ``pulumi`` is given
the same port by the kernel, the new program's channel takes that subchannel and its first call
fails at once with ``UNAVAILABLE``, which the SDK reports as ``Resource monitor has terminated,
shutting down``: an ``up`` failed for nothing (seen once in a full CI run, which had killed many
a ``pulumi`` mid-``up`` before). The channel argument ``grpc.use_local_subchannel_pool`` gives
each channel its own subchannels, so a new ``pulumi`` is always reached afresh
(``tests/integration/engine/test_program_channels.py`` shows both).

The SDK builds every channel with one list of options (``pulumi.runtime._grpc_settings``, a
private name of the SDK: checked by that test against the SDK version in use); the argument is
added to it once.
"""

from __future__ import annotations

from pulumi.runtime import _grpc_settings

__all__ = ["LOCAL_SUBCHANNELS", "use_own_connections"]

LOCAL_SUBCHANNELS = ("grpc.use_local_subchannel_pool", 1)


def use_own_connections() -> None:
    """Make every gRPC channel the Pulumi SDK opens from now on use its own subchannels."""
    options = _grpc_settings._GRPC_CHANNEL_OPTIONS  # the SDK's private name (see above)
    if LOCAL_SUBCHANNELS not in options:
        options.append(LOCAL_SUBCHANNELS)
