"""What a client's connection settings meet in the emulator, checked with openstacksdk: the
catalog's internal and admin endpoints (each its own URL), pages capped by the services'
``pagination_max_limit``, and HTTPS with a CA file and client certificates."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openstack
import pytest
import requests
from openstack import exceptions

from emulator.server import EmulatorHandle, tls_context
from reconciler.local.pki import PkiFiles, write_pki
from tests.emulated import connect, running_emulator
from tests.integration.emulator.conftest import Admin


def _connect(topo: dict[str, Any], **extra: Any) -> Any:
    return openstack.connect(
        auth_url=topo["auth_url"],
        username=topo["username"],
        password=topo["password"],
        project_name=topo["project_name"],
        user_domain_name="Default",
        project_domain_name="Default",
        region_name=topo["region_name"],
        **extra,
    )


def test_each_interface_has_its_own_url(emu: EmulatorHandle, conn: Any) -> None:
    catalog = conn.session.auth.get_access(conn.session).service_catalog.catalog
    urls = {
        (entry["type"], ep["interface"]): ep["url"]
        for entry in catalog
        for ep in entry["endpoints"]
    }
    assert urls[("load-balancer", "public")] == f"{emu.url}/load-balancer"
    assert urls[("load-balancer", "internal")] == f"{emu.url}/internal/load-balancer"
    assert urls[("network", "admin")] == f"{emu.url}/admin-interface/networking"
    # the emulator's own endpoints are in no catalog, under no interface
    assert requests.get(f"{emu.url}/internal/admin/health", timeout=10).status_code == 404


def test_a_client_told_to_use_the_internal_interface_uses_it(
    topo: dict[str, Any], admin: Admin
) -> None:
    # public endpoints unreachable from here: the client must take the internal ones
    for service in ("octavia", "neutron"):
        admin.post(
            "/faults/rules",
            {
                "operation": f"{service}.*",
                "interface": "public",
                "status": 403,
                "message": "public endpoints are not reachable from here",
            },
        )
    internal = _connect(topo, interface="internal")
    assert list(internal.load_balancer.load_balancers()) == []
    assert [n.name for n in internal.network.networks(name="private")] == ["private"]
    with pytest.raises(exceptions.ForbiddenException, match="not reachable from here"):
        list(connect(topo).load_balancer.load_balancers())


def test_pagination_max_limit_pages_every_list_and_sdk_follows_the_links() -> None:
    with running_emulator(pagination_max_limit=2) as emu:
        topo = emu.topology()
        conn = connect(topo)
        for i in range(5):
            conn.load_balancer.create_load_balancer(
                name=f"paged-{i}", vip_subnet_id=topo["subnet_id"]
            )
            conn.network.create_ip(
                floating_network_id=topo["external_network_id"], description=f"paged-{i}"
            )
        first = conn.load_balancer.get("/lbaas/loadbalancers").json()
        assert len(first["loadbalancers"]) == 2
        (link,) = first["loadbalancers_links"]
        assert link["rel"] == "next"
        assert link["href"].startswith(f"{emu.url}/load-balancer/v2")
        asked_more = conn.load_balancer.get("/lbaas/loadbalancers?limit=10").json()
        assert len(asked_more["loadbalancers"]) == 2  # the limit is capped, as by Octavia
        fips = conn.network.get("/floatingips").json()
        assert len(fips["floatingips"]) == 2
        assert [li["rel"] for li in fips["floatingips_links"]] == ["next"]
        names = sorted(lb.name for lb in conn.load_balancer.load_balancers())
        assert names == [f"paged-{i}" for i in range(5)]
        assert len(list(conn.network.ips())) == 5
        # through the internal interface, the links stay on it
        internal = _connect(topo, interface="internal")
        page = internal.load_balancer.get("/lbaas/loadbalancers").json()
        href = page["loadbalancers_links"][0]["href"]
        assert href.startswith(f"{emu.url}/internal/load-balancer/v2")
        assert len(list(internal.load_balancer.load_balancers())) == 5


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PkiFiles:
    # the local control plane's throw-away PKI: a serving certificate for 127.0.0.1 and a
    # client certificate, both signed by one CA
    return write_pki(tmp_path_factory.mktemp("emulator-pki"))


@pytest.fixture
def tls_emu(pki: PkiFiles) -> Iterator[EmulatorHandle]:
    context = tls_context(
        cert_file=pki.serving_cert, key_file=pki.serving_key, client_ca_file=pki.ca_cert
    )
    with running_emulator(ssl_context=context) as emu:
        yield emu


def test_https_with_a_ca_file_and_a_client_certificate(
    tls_emu: EmulatorHandle, pki: PkiFiles
) -> None:
    topo = tls_emu.topology()
    assert topo["auth_url"].startswith("https://127.0.0.1:")
    conn = _connect(topo, cacert=str(pki.ca_cert), cert=str(pki.admin_cert), key=str(pki.admin_key))
    assert list(conn.load_balancer.load_balancers()) == []
    catalog = conn.session.auth.get_access(conn.session).service_catalog.catalog
    assert all(ep["url"].startswith("https://") for e in catalog for ep in e["endpoints"])
    with pytest.raises(exceptions.SDKException, match=r"(?i)certificate"):  # no CA: untrusted
        _connect(topo, cert=str(pki.admin_cert), key=str(pki.admin_key)).authorize()
    with pytest.raises(exceptions.SDKException):  # no client certificate: the handshake fails
        _connect(topo, cacert=str(pki.ca_cert)).authorize()


def test_tls_admin_endpoint_and_plain_http_refused(tls_emu: EmulatorHandle, pki: PkiFiles) -> None:
    cert = (str(pki.admin_cert), str(pki.admin_key))
    health = requests.get(
        f"{tls_emu.url}/admin/health", verify=str(pki.ca_cert), cert=cert, timeout=10
    )
    assert health.json() == {"status": "ok"}
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{tls_emu.port}/admin/health", timeout=10)
