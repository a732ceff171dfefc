"""The engine's OpenStack client (keystoneauth1) against the emulator, logged in from cloud.conf
as the controller logs in: each way of logging in, the endpoint interface, TLS with a CA file
and a client certificate, pagination, retries of 409 and 5xx, a new login after a 401, and the
cloud's own message in every error. No Pulumi here: the client is what the delete path, the
recovery, ``sweep`` and ``adopt`` use when no stack can answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator.faults import FaultConfig, FaultRule
from emulator.server import EmulatorHandle, tls_context
from reconciler.cli.main import main
from reconciler.config import AuthConfig, parse_cloud_conf
from reconciler.engine.openstack.client import LoginError, OpenStackRest, OpenStackRestError
from reconciler.local.pki import PkiFiles, write_pki
from reconciler.toolchain import Toolchain
from stacks.vocabulary import FIP_TYPE, LISTENER_TYPE
from tests.emulated import EmulatorAdmin, connect, running_emulator, wait_until


def auth_of(text: str) -> AuthConfig:
    parsed = parse_cloud_conf(text=text, environ={}, search_dirs=())
    assert parsed.config is not None, [str(e) for e in parsed.errors]
    return parsed.config.auth


def password_conf(topo: dict[str, Any], **extra: str) -> str:
    lines = {
        "auth-url": topo["auth_url"],
        "username": topo["username"],
        "password": topo["password"],
        "tenant-name": topo["project_name"],
        "user-domain-name": topo["user_domain_name"],
        "tenant-domain-name": topo["project_domain_name"],
        "region": topo["region_name"],
        **extra,
    }
    return "[Global]\n" + "".join(f"{k} = {v}\n" for k, v in lines.items() if v)


def client(topo: dict[str, Any], **extra: str) -> OpenStackRest:
    return OpenStackRest(auth=auth_of(password_conf(topo, **extra)))


def make_lb(conn: Any, topo: dict[str, Any], name: str) -> Any:
    lb = conn.load_balancer.create_load_balancer(name=name, vip_subnet_id=topo["subnet_id"])
    return conn.load_balancer.wait_for_load_balancer(lb.id, interval=0.05, wait=15)


@pytest.fixture
def fresh() -> Iterator[EmulatorHandle]:
    """An emulator of the test's own (its faults and objects touch no other test)."""
    with running_emulator() as emu:
        yield emu


# -- logging in -------------------------------------------------------------------------------


def test_password_login_reads_and_deletes(fresh: EmulatorHandle) -> None:
    topo = fresh.topology()
    conn = connect(topo)
    lb = make_lb(conn, topo, "client-pw")
    rest = client(topo)
    rest.login()
    assert [x["id"] for x in rest.load_balancers_named("client-pw")] == [lb.id]
    assert rest.load_balancer(lb.id)["provisioning_status"] == "ACTIVE"
    rest.delete_load_balancer(lb.id)
    wait_until(lambda: rest.load_balancer(lb.id) is None)
    assert rest.load_balancer("no-such-lb") is None  # 404 is "gone", not an error


def test_application_credential_login(fresh: EmulatorHandle) -> None:
    topo = fresh.topology()
    make_lb(connect(topo), topo, "client-appcred")
    rest = OpenStackRest(
        auth=auth_of(
            f"[Global]\nauth-url = {topo['auth_url']}\n"
            f"application-credential-id = {topo['application_credential_id']}\n"
            f"application-credential-secret = {topo['application_credential_secret']}\n"
        )
    )
    assert [x["name"] for x in rest.load_balancers()] == ["client-appcred"]


def test_token_login(fresh: EmulatorHandle) -> None:
    topo = fresh.topology()
    conn = connect(topo)
    make_lb(conn, topo, "client-token")
    rest = OpenStackRest(
        auth=auth_of(
            f"[Global]\nauth-url = {topo['auth_url']}\ntoken = {conn.auth_token}\n"
            f"tenant-id = {topo['project_id']}\n"
        )
    )
    assert [x["name"] for x in rest.load_balancers()] == ["client-token"]


@pytest.mark.parametrize("entry", ["emulator", "emulator-appcred"])
def test_clouds_yaml_login(fresh: EmulatorHandle, tmp_path: Path, entry: str) -> None:
    topo = fresh.topology()
    make_lb(connect(topo), topo, "client-clouds")
    clouds = fresh.write_clouds_yaml(path=tmp_path / "clouds.yaml")
    auth = auth_of(f"[Global]\nuse-clouds = true\nclouds-file = {clouds}\ncloud = {entry}\n")
    assert [x["name"] for x in OpenStackRest(auth=auth).load_balancers()] == ["client-clouds"]


def test_a_refused_login_names_the_settings_and_quotes_keystone(fresh: EmulatorHandle) -> None:
    topo = fresh.topology()
    rest = client(topo, password="not-the-password")
    with pytest.raises(LoginError) as caught:
        rest.login()
    text = str(caught.value)
    assert caught.value.status == 401
    assert f"cannot log in to Keystone at {topo['auth_url']} (auth-url)" in text
    assert "the password of user demo for project demo (tenant-name)" in text
    assert "the cloud answered 401: The request you have made requires authentication." in text
    assert "check username, password" in text
    assert "not-the-password" not in text
    with pytest.raises(LoginError):  # every call says the same, nothing else is tried
        rest.load_balancers()


def test_an_unreachable_keystone_and_a_missing_endpoint(fresh: EmulatorHandle) -> None:
    topo = fresh.topology()
    gone = client(topo, **{"auth-url": "http://127.0.0.1:9/identity/v3"})
    with pytest.raises(LoginError, match=r"no answer: .*check auth-url") as caught:
        gone.login()
    assert caught.value.status is None
    elsewhere = client(topo, region="RegionTwo")
    with pytest.raises(LoginError, match="no public load-balancer endpoint in region RegionTwo"):
        elsewhere.login()


# -- where the client goes --------------------------------------------------------------------


def test_the_internal_endpoints_are_used_when_configured() -> None:
    # public endpoints unreachable from here, as from many clusters' nodes
    rules = tuple(
        FaultRule(
            operation=f"{service}.*",
            interface="public",
            status=403,
            message="public endpoints are not reachable from here",
        )
        for service in ("octavia", "neutron")
    )
    with running_emulator(faults=FaultConfig(rules=rules)) as emu:
        topo = emu.topology()
        internal = client(topo, **{"os-endpoint-type": "internal"})
        assert internal.load_balancers() == []
        assert internal.floating_ips_on_port("no-port") == []
        with pytest.raises(OpenStackRestError) as caught:
            client(topo).load_balancers()
        assert caught.value.status == 403
        assert "public endpoints are not reachable from here" in str(caught.value)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PkiFiles:
    return write_pki(tmp_path_factory.mktemp("client-pki"))


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")  # tls-insecure
def test_tls_with_a_ca_file_and_a_client_certificate(pki: PkiFiles) -> None:
    context = tls_context(
        cert_file=pki.serving_cert, key_file=pki.serving_key, client_ca_file=pki.ca_cert
    )
    with running_emulator(ssl_context=context) as emu:
        topo = emu.topology()
        assert topo["auth_url"].startswith("https://")
        cert = {"cert-file": str(pki.admin_cert), "key-file": str(pki.admin_key)}
        assert client(topo, **{"ca-file": str(pki.ca_cert)}, **cert).load_balancers() == []
        assert client(topo, **{"tls-insecure": "true"}, **cert).load_balancers() == []
        with pytest.raises(LoginError, match=r"(?i)certificate.*check ca-file"):
            client(topo, **cert).login()  # the system's CAs do not know this one
        with pytest.raises(LoginError, match="cert-file/key-file"):
            client(topo, **{"ca-file": str(pki.ca_cert)}).login()  # no client certificate


# -- what comes back --------------------------------------------------------------------------


def test_lists_are_read_page_by_page() -> None:
    with running_emulator(pagination_max_limit=2) as emu:
        topo = emu.topology()
        conn = connect(topo)
        lbs = [make_lb(conn, topo, f"paged-{i}") for i in range(5)]
        for port in (80, 81, 82):
            conn.load_balancer.create_listener(
                name=f"listener-{port}",
                load_balancer_id=lbs[0].id,
                protocol="TCP",
                protocol_port=port,
                tags=[f"svc-{port}"],
            )
            conn.load_balancer.wait_for_load_balancer(lbs[0].id, interval=0.05, wait=15)
        fips = [
            conn.network.create_ip(
                floating_network_id=topo["external_network_id"], description=f"fip-{i}"
            )
            for i in range(5)
        ]
        rest = client(topo)
        assert sorted(lb["name"] for lb in rest.load_balancers()) == [
            f"paged-{i}" for i in range(5)
        ]
        assert sorted(rest.listener_tags(lbs[0].id)) == [("svc-80",), ("svc-81",), ("svc-82",)]
        assert rest.find_ids(type_token=FIP_TYPE, find_by={"description": "fip-4"}) == [fips[4].id]
        found = rest.find_ids(
            type_token=LISTENER_TYPE,
            find_by={"name": "listener-82", "loadbalancerId": lbs[0].id},
        )
        assert found is not None
        assert len(found) == 1
        assert len(EmulatorAdmin(emu).lbs()) == 5


def test_409_and_5xx_are_retried_until_the_cloud_takes_them(fresh: EmulatorHandle) -> None:
    topo = fresh.topology()
    lb = make_lb(connect(topo), topo, "client-retry")
    admin = EmulatorAdmin(fresh)
    rest = client(topo)
    for operation, status, count in (
        ("octavia.loadbalancer.update", 409, 2),
        ("octavia.loadbalancer.list", 503, 2),
        ("neutron.floatingip.list", 502, 1),
    ):
        admin.post("/faults/rules", {"operation": operation, "status": status, "count": count})
    rest.set_load_balancer_tags(lb.id, ["kube_service_x"])
    assert rest.load_balancer(lb.id)["tags"] == ["kube_service_x"]
    assert [x["id"] for x in rest.load_balancers()] == [lb.id]
    assert rest.floating_ips_on_port(lb.vip_port_id) == []
    assert admin.get("/faults/fired") == {"rules[0]": 2, "rules[1]": 2, "rules[2]": 1}


def test_the_clouds_message_and_status_are_kept(fresh: EmulatorHandle) -> None:
    topo = fresh.topology()
    conn = connect(topo)
    lb = make_lb(conn, topo, "client-errors")
    conn.load_balancer.create_listener(load_balancer_id=lb.id, protocol="TCP", protocol_port=80)
    conn.load_balancer.wait_for_load_balancer(lb.id, interval=0.05, wait=15)
    rest = client(topo)
    with pytest.raises(OpenStackRestError) as caught:
        rest.delete_load_balancer(lb.id, cascade=False)  # 400: it has children
    error = caught.value
    assert (error.status, error.method) == (400, "DELETE")
    assert error.path == f"/v2/lbaas/loadbalancers/{lb.id}"
    assert "it has children" in error.cloud_message
    assert str(error).startswith(
        f"the cloud answered 400 to DELETE /v2/lbaas/loadbalancers/{lb.id}: "
        f"Validation failure: Cannot delete Load Balancer {lb.id} - it has children."
    )
    assert error.failure_kind == "backoff"
    EmulatorAdmin(fresh).post(
        "/faults/rules",
        {"operation": "octavia.loadbalancer.delete", "status": 409, "message": "Busy, try later"},
    )
    with pytest.raises(OpenStackRestError) as busy:  # 409 retried, then given up on
        rest.delete_load_balancer(lb.id)
    assert busy.value.conflict
    assert busy.value.failure_kind == "busy"
    assert "the cloud answered 409 to DELETE" in str(busy.value)
    assert "Busy, try later" in str(busy.value)
    fired = EmulatorAdmin(fresh).get("/faults/fired")
    assert fired == {"rules[0]": 5}  # the first try and four retries


def test_a_token_the_cloud_forgot_is_replaced_by_a_new_login() -> None:
    with running_emulator() as first:
        topo = first.topology()
        rest = client(topo)
        assert rest.load_balancers() == []
        old = rest.cloud._session.get_token()
        second = first.restart()  # a fresh cloud: every token it issued is unknown now
        try:
            make_lb(connect(topo), topo, "after-restart")
            assert [x["name"] for x in rest.load_balancers()] == ["after-restart"]
            assert rest.cloud._session.get_token() != old
        finally:
            second.stop()


def test_sweep_stops_at_a_refused_login_with_what_to_fix(
    toolchain: Toolchain,
    fresh: EmulatorHandle,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    commands_env: pytest.MonkeyPatch,
) -> None:
    conf = tmp_path / "cloud.conf"
    conf.write_text(password_conf(fresh.topology(), password="not-the-password"))
    code = main(
        [
            "sweep",
            "--cloud-config", str(conf),
            "--state-dir", str(tmp_path / "lbr"),
            "--cluster-name", "login-test",
        ]
    )  # fmt: skip
    _out, err = capsys.readouterr()
    assert code == 1
    assert err.startswith("error: cannot use the OpenStack cloud: cannot log in to Keystone at ")
    assert "the cloud answered 401" in err
    assert "check username, password" in err
    assert "not-the-password" not in err
