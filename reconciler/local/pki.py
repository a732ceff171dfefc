"""A throw-away PKI for the local control plane: a CA, a serving cert, a client cert, SA keys.

Everything is generated fresh per control plane and lives only in its work folder. Keys are EC
P-256 (fast to generate, accepted by kube-apiserver for serving, client auth and service-account
signing).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class PkiFiles:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_public: Path
    sa_private: Path


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert(
    *,
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    ca: bool,
    usage: list[x509.ObjectIdentifier],
    sans: list[x509.GeneralName],
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=7))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    if usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def write_pki(folder: Path) -> PkiFiles:
    """Generate the control plane's PKI into ``folder`` and return the file paths."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("lb-reconciler-local-ca")
    ca = _cert(
        subject=ca_name,
        key=ca_key,
        issuer=ca_name,
        issuer_key=ca_key,
        ca=True,
        usage=[],
        sans=[],
    )
    serving_key = ec.generate_private_key(ec.SECP256R1())
    serving = _cert(
        subject=_name("kube-apiserver"),
        key=serving_key,
        issuer=ca_name,
        issuer_key=ca_key,
        ca=False,
        usage=[ExtendedKeyUsageOID.SERVER_AUTH],
        sans=[
            x509.DNSName("localhost"),
            x509.DNSName("kubernetes.default.svc"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        ],
    )
    admin_key = ec.generate_private_key(ec.SECP256R1())
    admin = _cert(
        subject=_name("lb-reconciler-admin", "system:masters"),
        key=admin_key,
        issuer=ca_name,
        issuer_key=ca_key,
        ca=False,
        usage=[ExtendedKeyUsageOID.CLIENT_AUTH],
        sans=[],
    )
    sa_key = ec.generate_private_key(ec.SECP256R1())
    files = PkiFiles(
        ca_cert=folder / "ca.crt",
        serving_cert=folder / "apiserver.crt",
        serving_key=folder / "apiserver.key",
        admin_cert=folder / "admin.crt",
        admin_key=folder / "admin.key",
        sa_public=folder / "sa.pub",
        sa_private=folder / "sa.key",
    )
    pem = serialization.Encoding.PEM
    files.ca_cert.write_bytes(ca.public_bytes(pem))
    files.serving_cert.write_bytes(serving.public_bytes(pem))
    files.serving_key.write_bytes(_key_pem(serving_key))
    files.admin_cert.write_bytes(admin.public_bytes(pem))
    files.admin_key.write_bytes(_key_pem(admin_key))
    files.sa_private.write_bytes(_key_pem(sa_key))
    files.sa_public.write_bytes(
        sa_key.public_key().public_bytes(pem, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    for key_file in (files.serving_key, files.admin_key, files.sa_private):
        key_file.chmod(0o600)
    return files
