"""A new inline program reaches its ``pulumi`` even on a port an earlier, dead one used.

Real gRPC servers on loopback stand in for two ``pulumi`` resource monitors that the kernel gave
the same port, one after the other; the channels are the Pulumi SDK's own (its ``Settings``, as
an inline program's run makes them). Without :mod:`reconciler.engine.program_channels` the new
program's first call fails with ``UNAVAILABLE`` (the SDK's "Resource monitor has terminated,
shutting down", which failed an ``up`` in a CI run); with it, the call is answered.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from pulumi.runtime import _grpc_settings
from pulumi.runtime.proto import resource_pb2, resource_pb2_grpc
from pulumi.runtime.settings import Settings

from reconciler.engine.program_channels import LOCAL_SUBCHANNELS, use_own_connections


class Monitor(resource_pb2_grpc.ResourceMonitorServicer):
    def SupportsFeature(self, request: Any, context: Any) -> Any:  # noqa: N802 (gRPC's name)
        return resource_pb2.SupportsFeatureResponse(hasSupport=True)


def monitor(port: int = 0) -> tuple[grpc.Server, int]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    resource_pb2_grpc.add_ResourceMonitorServicer_to_server(Monitor(), server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    return server, bound


def sdk_channel(address: str) -> Any:
    """The monitor stub an inline program's run makes (``Settings(monitor=...)``), in a context
    of its own so this process's ambient settings stay as they were."""
    return contextvars.copy_context().run(lambda: Settings("p", "s", monitor=address).monitor)


def ask(stub: Any) -> str:
    try:
        stub.SupportsFeature(resource_pb2.SupportsFeatureRequest(id="secrets"))
    except grpc.RpcError as exc:
        return str(exc.code())
    return "answered"


# A connection that failed waits this long before it tries again (gRPC's reconnect backoff,
# 1 s by default, jittered). The old program's failed call puts the shared connection in that
# wait; at the default, a loaded machine (a CI run beside other tests) took longer than it to
# start the next monitor, the shared connection had reconnected, and the test without own
# connections saw its call answered. A minute is longer than any start here.
LONG_BACKOFF = [
    ("grpc.initial_reconnect_backoff_ms", 60_000),
    ("grpc.min_reconnect_backoff_ms", 60_000),
]


@pytest.fixture
def sdk_options() -> Iterator[list[Any]]:
    """The SDK's channel options with a long reconnect backoff, restored afterwards."""
    options = _grpc_settings._GRPC_CHANNEL_OPTIONS
    saved = list(options)
    options.extend(LONG_BACKOFF)
    yield options
    options[:] = saved


def second_program_on_the_same_port() -> str:
    first, port = monitor()
    old = sdk_channel(f"127.0.0.1:{port}")
    assert ask(old) == "answered"
    first.stop(0).wait()
    # the old program asks once more (its pulumi is gone): its connection now backs off
    assert ask(old) == "StatusCode.UNAVAILABLE"
    second, again = monitor(port)  # the next pulumi, given the same port
    try:
        assert again == port
        return ask(sdk_channel(f"127.0.0.1:{port}"))
    finally:
        second.stop(0).wait()


def test_without_own_connections_the_new_program_fails_at_once(sdk_options: list[Any]) -> None:
    sdk_options[:] = [o for o in sdk_options if o != LOCAL_SUBCHANNELS]
    assert second_program_on_the_same_port() == "StatusCode.UNAVAILABLE"


def test_with_own_connections_the_new_program_is_answered(sdk_options: list[Any]) -> None:
    use_own_connections()
    use_own_connections()  # once is enough; twice changes nothing
    assert sdk_options.count(LOCAL_SUBCHANNELS) == 1
    assert second_program_on_the_same_port() == "answered"
