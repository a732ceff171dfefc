"""How the engine reads a failed ``pulumi`` run: the class (which decides the retry), the
message a user reads, and what is redacted. On real texts of real runs
(``tests/unit/pulumi_failures/``, see its README), not on phrases made up for the test."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.engine.errors import (
    CloudUnavailableError,
    ConflictError,
    EngineError,
    InternalError,
    InvalidConfigError,
    QuotaError,
    UpTimeoutError,
    engine_error,
    error_class,
)
from reconciler.engine.failure_text import CloudFault, cloud_faults, headline
from reconciler.engine.openstack.client import OpenStackRestError
from reconciler.engine.redact import redact
from reconciler.engine.stack import Engine

TEXTS = Path(__file__).parent / "pulumi_failures"
LB_ID = "38a083fc-ac55-4f55-a4d5-d7d2c549b4eb"
POOL_ID = "0d7fb3be-b37c-4abf-b5c5-136566b82d60"


def text(name: str) -> str:
    return (TEXTS / f"{name}.txt").read_text()


def pending_409() -> str:
    """Octavia's 409 for a load balancer in PENDING_UPDATE, in the provider's words: the real
    create failure with the status and body Octavia (and the emulator) answer then. The provider
    retries 409s itself until its timeout, so a real run takes 10 minutes to show one."""
    return (
        text("create_invalid_zone_400")
        .replace("but got 400 instead", "but got 409 instead")
        .replace(
            "Validation failure: Invalid availability zone az-2.",
            f"Invalid state PENDING_UPDATE of loadbalancer resource {LB_ID}",
        )
    )


def destroy_404() -> str:
    """A ``destroy`` whose DELETE the cloud answers 404 with a body (the real 500 run, with
    Octavia's 404)."""
    return (
        text("destroy_pool_500")
        .replace("but got 500 instead", "but got 404 instead")
        .replace(
            '"faultcode": "Server", "faultstring": "Injected fault"',
            f'"faultcode": "Client", "faultstring": "Pool {POOL_ID} could not be found."',
        )
    )


# -- classification ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("create_invalid_zone_400", InvalidConfigError),
        ("replace_invalid_zone_400", InvalidConfigError),
        ("create_policy_403", InvalidConfigError),
        ("create_invalid_spec_subnet", InvalidConfigError),
        ("destroy_has_children_400", InvalidConfigError),
        ("create_octavia_quota_403", QuotaError),
        ("create_neutron_quota_409", QuotaError),
        ("create_500", CloudUnavailableError),
        ("destroy_pool_500", CloudUnavailableError),
        ("create_connection_reset", CloudUnavailableError),
        ("up_locked", ConflictError),
    ],
)
def test_classify_real_runs(name: str, expected: type[EngineError]) -> None:
    assert error_class(text(name)) is expected


def test_an_option_the_provider_does_not_support_is_a_refusal_not_an_outage() -> None:
    """Octavia answers 501 (``ProviderUnsupportedOptionError``) to an option its provider driver
    cannot do: the request is refused, and the cloud is not down."""
    said = (
        text("create_invalid_zone_400")
        .replace("but got 400 instead", "but got 501 instead")
        .replace('"faultcode": "Client"', '"faultcode": "Server"')
        .replace(
            "Validation failure: Invalid availability zone az-2.",
            "Provider 'amphora' does not support a requested option: Amphora provider does not "
            "support SOURCE_IP_PORT algorithm.",
        )
    )
    assert error_class(said) is InvalidConfigError


def test_a_cloud_400_is_never_retried_soon_whatever_the_outputs_say() -> None:
    """The user's report: Octavia's 400 retried every 2-3 s without an Event. The run's
    ``Outputs:`` list the listener's ``timeout_client_data``; ``timeout`` anywhere in the text
    was read as "busy, retry soon"."""
    replaced = text("replace_invalid_zone_400")
    assert "timeout_client_data" in replaced
    assert error_class(replaced) is InvalidConfigError


def test_names_in_the_run_do_not_classify_it() -> None:
    """A Service called ``quota-500-eof`` appears in every progress line and output of its
    stack; only what the cloud and the tools said went wrong counts."""
    renamed = text("create_invalid_zone_400").replace("accept.frozen", "accept.quota-500-eof")
    assert error_class(renamed) is InvalidConfigError
    locked = text("up_locked").replace("demo.accept.l1", "demo.accept.quota-timeout")
    assert error_class(locked) is ConflictError


def test_busy_is_only_what_says_busy() -> None:
    assert error_class(pending_409()) is ConflictError
    # a 409 and a 400 in one run: not retried soon, the 400 will not clear by itself
    both = pending_409() + "\n" + text("create_invalid_zone_400")
    assert error_class(both) is InvalidConfigError


def test_a_404_during_destroy_is_a_refusal_not_busy() -> None:
    assert error_class(destroy_404()) is InvalidConfigError


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        # gophercloud v1's default errors (providers built on it)
        (
            "error: Bad request with: [POST http://octavia:9876/v2.0/lbaas/loadbalancers], "
            'error message: {"faultcode": "Client", "faultstring": "Invalid input"}',
            InvalidConfigError,
        ),
        ("error: Error reading pool: Resource not found", InvalidConfigError),
        ("error: Authentication failed", InvalidConfigError),
        (
            "error: Error waiting for openstack_lb_loadbalancer_v2 x to become ACTIVE: timeout "
            "while waiting for state to become 'ACTIVE' (last state: 'PENDING_UPDATE', "
            "timeout: 10m0s)",
            UpTimeoutError,
        ),
        (
            "error: Error waiting for pool p to become ACTIVE: unexpected state "
            "'PENDING_UPDATE', wanted target 'ACTIVE'",
            ConflictError,
        ),
        ("error: failed to load checkpoint: EOF", CloudUnavailableError),
        # refused by protection (stacks/program.py): the plan is wrong, not the cloud busy
        ('error: unable to replace resource "urn:..." as it is protected', InvalidConfigError),
        ("panic: nil pointer dereference", InternalError),
    ],
)
def test_classify_other_shapes(said: str, expected: type[EngineError]) -> None:
    assert error_class(said) is expected


# -- the message ------------------------------------------------------------------------------


def test_cloud_faults_read_the_body() -> None:
    assert cloud_faults(text("create_neutron_quota_409")) == [
        CloudFault(
            409,
            "POST",
            "/networking/v2.0/floatingips",
            "Quota exceeded for resources: ['floatingip'].",
            "OverQuota",
        )
    ]
    keystone = (
        "error: Expected HTTP response code [201] when accessing [POST http://k/v3/auth/tokens]"
        ', but got 401 instead: {"error": {"code": 401, "message": "The request you have made '
        'requires authentication.", "title": "Unauthorized"}}'
    )
    assert cloud_faults(keystone) == [
        CloudFault(
            401,
            "POST",
            "/v3/auth/tokens",
            "The request you have made requires authentication.",
            "Unauthorized",
        )
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "create_invalid_zone_400",
            "the cloud answered 400 to POST /load-balancer/v2.0/lbaas/loadbalancers: "
            "Validation failure: Invalid availability zone az-2.",
        ),
        (
            "create_octavia_quota_403",
            "the cloud answered 403 to POST /load-balancer/v2.0/lbaas/loadbalancers: "
            "Quota has been met for resources: Load Balancer",
        ),
        (
            "destroy_pool_500",
            f"the cloud answered 500 to DELETE /load-balancer/v2.0/lbaas/pools/{POOL_ID}: "
            "Injected fault",
        ),
        (
            "create_invalid_spec_subnet",
            "subnet-id 6b2f4a1c-0000-4000-8000-00000000dead does not exist (or is not visible "
            "to this project); give an existing subnet in the "
            "loadbalancer.openstack.org/subnet-id annotation, or subnet-id in the Service's "
            "[LoadBalancerClass] or in [LoadBalancer] of cloud.conf",
        ),
        (
            "create_connection_reset",
            'Error creating openstack_lb_loadbalancer_v2: Post "http://127.0.0.1:41287/'
            'load-balancer/v2.0/lbaas/loadbalancers": OpenStack connection error, retries '
            "exhausted. Aborting. Last error was: read tcp 127.0.0.1:53946->127.0.0.1:41287: "
            "read: connection reset by peer",
        ),
        (
            "up_locked",
            "the stack is currently locked by 1 lock(s). Either wait for the other process(es) "
            "to end or delete the lock file with `pulumi cancel`.",
        ),
    ],
)
def test_headline_is_the_clouds_own_message(name: str, expected: str) -> None:
    assert headline(text(name)) == expected


def test_engine_error_puts_the_headline_first_and_the_run_after() -> None:
    error = engine_error(
        text("replace_invalid_zone_400"),
        doing="up",
        subject="stack demo.accept.frozen",
        stack="demo.accept.frozen",
    )
    first, *rest = str(error).splitlines()
    assert first == (
        "up of stack demo.accept.frozen failed: the cloud answered 400 to POST "
        "/load-balancer/v2.0/lbaas/loadbalancers: Validation failure: Invalid availability "
        "zone az-2."
    )
    assert rest, "the run's error lines follow, for the log"
    assert not any("timeout_client_data" in line for line in rest)  # no outputs
    assert not any("(0s)" in line for line in rest)  # no timings: the same from run to run


def test_the_message_is_the_same_from_one_attempt_to_the_next() -> None:
    """Events aggregate on equal messages; pulumi's timings differ between runs."""
    one = text("destroy_pool_500")
    two = one.replace("(120s)", "(121.5s)").replace("(0s)", "(0.02s)")
    assert str(engine_error(one, doing="destroy", subject="s", stack="s")) == str(
        engine_error(two, doing="destroy", subject="s", stack="s")
    )


# -- redaction --------------------------------------------------------------------------------

DEMO_PASSPHRASE = "lb-reconciler-demo"  # reconciler/local/demo.py
STACK = "demo.accept.frozen"


def engine_error_of(message: str, secrets: list[str], stack: str = STACK) -> EngineError:
    """``Engine.error`` itself, on an engine holding only ``secrets``."""
    engine = SimpleNamespace(_secrets=secrets)
    return Engine.error(engine, RuntimeError(message), stack=stack, doing="up")  # type: ignore[arg-type]


def test_the_demo_passphrase_no_longer_eats_the_stack_name() -> None:
    """The issue's ``[secret].accept.frozen``: not the username (never a secret here) but the
    demo's passphrase ``lb-reconciler-demo``, which is pulumi's name of the root resource of
    every stack of cluster ``demo`` (``lb-reconciler-demo.accept.frozen``)."""
    raw = text("create_invalid_zone_400")
    assert f"lb-reconciler-{STACK}" in raw
    error = engine_error_of(raw, ["demo-password", DEMO_PASSPHRASE])
    assert "[secret]" not in str(error)
    assert f"lb-reconciler-{STACK}" in str(error)
    # the passphrase anywhere else is still redacted
    leaked = raw + "\nerror: bad passphrase lb-reconciler-demo given"
    assert "bad passphrase [secret] given" in str(engine_error_of(leaked, [DEMO_PASSPHRASE]))


def test_a_password_equal_to_a_name_is_redacted_outside_the_stack_names() -> None:
    """A real secret never leaks: a password ``demo`` is replaced wherever it is not part of
    the stack's own (public) names, however short."""
    said = (
        f"error: pulumi:pulumi:Stack lb-reconciler-{STACK}: Keystone refused user demo with "
        "password demo"
    )
    error = str(engine_error_of(said, ["demo"]))
    assert f"lb-reconciler-{STACK}" in error
    assert "user [secret] with password [secret]" in error


@pytest.mark.parametrize(
    "secret",
    ['pa"ss\\word', "p@ss/w rd+1", "pässwörd", "s3cr3t&x=1"],
)
def test_secrets_are_redacted_in_every_encoding(secret: str) -> None:
    import json
    from urllib.parse import quote, quote_plus

    body = json.dumps({"faultcode": "Client", "faultstring": f"bad password {secret}"})
    forms = [
        secret,
        body,
        json.dumps(body),  # a body quoted inside another JSON string
        json.dumps(secret, ensure_ascii=False),
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
        quote(secret, safe="").lower(),
    ]
    for form in forms:
        said = f"error: the cloud said {form} here"
        out = redact(said, [secret])
        assert secret not in out, form
        assert "[secret]" in out, form
    # and through the engine's parse of the body: the message never carries it either
    fault = (
        "error: Expected HTTP response code [201] when accessing [POST http://o/v2/lbs], but "
        f"got 400 instead: {body}"
    )
    error = str(engine_error_of(fault, [secret], stack="s"))
    assert secret not in error
    assert "bad password [secret]" in error.splitlines()[0]


def test_a_secret_containing_the_stack_name_is_redacted() -> None:
    secret = f"{STACK}-and-more"
    assert redact(f"x {secret} y {STACK}", [secret], keep=[STACK]) == f"x [secret] y {STACK}"


_SAFE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"  # cannot be made of "[secret]"


@given(
    secret=st.text(alphabet=_SAFE_ALPHABET, min_size=1, max_size=12),
    parts=st.lists(st.text(alphabet=_SAFE_ALPHABET + " .-:", max_size=20), max_size=5),
)
def test_a_secret_never_survives_redaction(secret: str, parts: list[str]) -> None:
    said = secret.join(["", *parts, ""])
    assert secret not in redact(said, [secret], keep=["lb-reconciler-demo.accept.x"])


# -- the engine's own requests (a direct delete) ------------------------------------------------


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (403, InvalidConfigError),
        (404, InvalidConfigError),
        (409, ConflictError),
        (501, InvalidConfigError),  # Octavia: the provider does not support an option
        (503, CloudUnavailableError),
        (None, CloudUnavailableError),
    ],
)
def test_the_engines_own_request_is_classed_by_the_clouds_answer(
    status: int | None, cls: type[EngineError]
) -> None:
    path = f"/load-balancer/v2.0/lbaas/loadbalancers/{LB_ID}"
    said = "Policy does not allow this request to be performed with secret-pw."
    failure = OpenStackRestError(
        f"the cloud answered {status} to DELETE {path}: {said}",
        status=status,
        method="DELETE",
        path=path,
        cloud_message=said,
    )
    engine = SimpleNamespace(
        _secrets=["secret-pw"], _role_hint=lambda: "the credential holds reader on project 'p'"
    )
    error = Engine.error(engine, failure, stack=STACK, doing="delete")  # type: ignore[arg-type]
    assert type(error) is cls
    hint = "; the credential holds reader on project 'p'" if status == 403 else ""
    assert str(error) == (
        f"delete of stack {STACK} failed: the cloud answered {status} to DELETE {path}: "
        f"Policy does not allow this request to be performed with [secret].{hint}"
    )


def test_a_refusal_by_policy_names_the_roles_the_credential_holds_and_the_one_it_needs() -> None:
    """A 403 that is not a quota, from a ``pulumi`` run or the engine's own request: the
    Warning says which roles the token holds (Keystone's answer) and which the policy wants."""
    rest = SimpleNamespace(roles=lambda: (["reader"], "demo"))
    auth = SimpleNamespace(tenant_name="from-config", tenant_id="")
    engine = SimpleNamespace(_secrets=[], rest=lambda: rest, settings=SimpleNamespace(auth=auth))
    engine._role_hint = lambda: Engine._role_hint(engine)  # type: ignore[arg-type]
    said = (
        "error: 1 error occurred:\n\t* creating openstack_lb_loadbalancer_v2: Expected HTTP "
        "response code [201 202] when accessing [POST http://o/v2/lbaas/loadbalancers], but "
        'got 403 instead: {"faultcode": "Client", "faultstring": "Policy does not allow this '
        'request to be performed.", "debuginfo": null}'
    )
    error = Engine.error(engine, RuntimeError(said), stack=STACK, doing="up")  # type: ignore[arg-type]
    assert type(error) is InvalidConfigError
    assert "Policy does not allow this request to be performed." in str(error)
    assert str(error).endswith(
        "; the credential holds reader on project 'demo'; making load balancers needs the role "
        "'member' on the project (Octavia's and Neutron's default policy), or "
        "'load-balancer_member' where the cloud runs Octavia's advanced policy"
    )
    quota = said.replace(
        "Policy does not allow this request to be performed.", "Quota has been met"
    )
    error = Engine.error(engine, RuntimeError(quota), stack=STACK, doing="up")  # type: ignore[arg-type]
    assert "credential" not in str(error)  # a quota is not a missing role

    def no_token() -> tuple[list[str], str]:
        raise OpenStackRestError("the cloud could not be reached")

    rest.roles = no_token
    error = Engine.error(engine, RuntimeError(said), stack=STACK, doing="up")  # type: ignore[arg-type]
    assert "; the credential was refused; making load balancers needs" in str(error)
