"""Certificates, keys and kubeconfig files for one devcluster, made with the openssl CLI.

The apiserver needs a serving certificate, a client CA, and a key pair to sign ServiceAccount
tokens; each component needs a client identity. We use the openssl command line (present on
every Linux and CI image) rather than a Python crypto package, so the devcluster adds no
dependency. Every call uses a private minimal openssl config, so the host's openssl.cnf cannot
inject extensions. TLS keys are ECDSA P-256 (fast to generate); the ServiceAccount signing key
is RSA 2048, the most widely supported JWT algorithm (RS256).

Identities follow kubeadm: the controller-manager and scheduler authenticate as
system:kube-controller-manager / system:kube-scheduler (bound by the bootstrap RBAC policy),
the admin and KWOK as members of system:masters.
"""

from __future__ import annotations

import base64
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

OPENSSL_CONFIG = "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = unused\n"
DAYS = "3650"


@dataclass(frozen=True)
class ClientCert:
    """A client certificate and its key, as files."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """Paths of everything make_pki writes."""

    dir: Path
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    sa_key: Path
    sa_pub: Path
    clients: dict[str, ClientCert]
    kubelet_cert: Path
    kubelet_key: Path


# user name -> (CN, O) of its client certificate
CLIENTS = {
    "admin": ("admin", "system:masters"),
    "kube-controller-manager": ("system:kube-controller-manager", ""),
    "kube-scheduler": ("system:kube-scheduler", ""),
    "kwok": ("kwok-controller", "system:masters"),
    # The apiserver's identity towards real kubelets (logs, exec), which trust our CA.
    "kube-apiserver-kubelet-client": ("kube-apiserver-kubelet-client", "system:masters"),
}
CLIENT_EXTENSIONS = "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n"


def _openssl(config: Path, *args: str) -> None:
    result = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False,
                            env={**os.environ, "OPENSSL_CONF": str(config)})
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")


def _subject(cn: str, org: str) -> str:
    return (f"/O={org}" if org else "") + f"/CN={cn}"


def _make_ca(d: Path, config: Path, name: str, cn: str) -> None:
    _openssl(config, "req", "-x509", "-config", str(config), "-newkey", "ec",
             "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.crt"), "-days", DAYS, "-sha256",
             "-subj", f"/CN={cn}",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")


def _sign_leaf(d: Path, config: Path, name: str, subject: str, extensions: str,
               ca: str = "ca") -> tuple[Path, Path]:
    key, csr, cert, ext = d / f"{name}.key", d / f"{name}.csr", d / f"{name}.crt", d / f"{name}.ext"
    _openssl(config, "req", "-new", "-config", str(config), "-newkey", "ec",
             "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key),
             "-out", str(csr), "-subj", subject)
    ext.write_text(extensions)
    _openssl(config, "x509", "-req", "-in", str(csr), "-CA", str(d / f"{ca}.crt"), "-CAkey", str(d / f"{ca}.key"),
             "-CAcreateserial", "-days", DAYS, "-sha256", "-extfile", str(ext), "-out", str(cert))
    csr.unlink()
    ext.unlink()
    return cert, key


def make_pki(d: Path, ip_sans: list[str]) -> Pki:
    """Write a fresh CA, the apiserver serving cert (for ip_sans and the in-cluster names), KWOK's
    kubelet serving cert (127.0.0.1), client certs for CLIENTS, the front-proxy CA and client, and
    the ServiceAccount key pair into folder d."""
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o700)
    config = d / "openssl.cnf"
    config.write_text(OPENSSL_CONFIG)

    _make_ca(d, config, "ca", "tfjob-devcluster-ca")

    dns = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
           "kubernetes.default.svc.cluster.local"]
    sans = ",".join([f"DNS:{n}" for n in dns] + [f"IP:{ip}" for ip in dict.fromkeys(ip_sans)])
    serving_cert, serving_key = _sign_leaf(
        d, config, "apiserver", "/CN=kube-apiserver",
        f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=CA:FALSE\n")

    # KWOK's kubelet-like server (container logs), which the apiserver reaches at 127.0.0.1 and
    # verifies with --kubelet-certificate-authority.
    kubelet_cert, kubelet_key = _sign_leaf(
        d, config, "kubelet", "/CN=kwok-kubelet",
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=CA:FALSE\n")

    clients = {}
    for user, (cn, org) in CLIENTS.items():
        cert, key = _sign_leaf(d, config, user, _subject(cn, org), CLIENT_EXTENSIONS)
        clients[user] = ClientCert(cert, key)

    # The front-proxy (request-header) CA: the apiserver publishes it in
    # kube-system/extension-apiserver-authentication, where the controller-manager's and the
    # scheduler's delegated authentication expect it (and log errors forever without it).
    _make_ca(d, config, "front-proxy-ca", "tfjob-devcluster-front-proxy-ca")
    _sign_leaf(d, config, "front-proxy-client", "/CN=front-proxy-client",
               "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n",
               ca="front-proxy-ca")

    _openssl(config, "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
             "-out", str(d / "sa.key"))
    _openssl(config, "pkey", "-in", str(d / "sa.key"), "-pubout", "-out", str(d / "sa.pub"))
    return Pki(d, d / "ca.crt", d / "ca.key", serving_cert, serving_key, d / "sa.key", d / "sa.pub", clients,
               kubelet_cert, kubelet_key)


def sign_client(d: Path, name: str, cn: str, org: str) -> ClientCert:
    """One more client certificate signed by the cluster's CA in folder d (e.g. a real kubelet's)."""
    cert, key = _sign_leaf(d, d / "openssl.cnf", name, _subject(cn, org), CLIENT_EXTENSIONS)
    return ClientCert(cert, key)


def sign_serving(d: Path, name: str, cn: str, ips: list[str]) -> tuple[Path, Path]:
    """A serving certificate for the given addresses, signed by the cluster's CA in folder d."""
    sans = ",".join(f"IP:{ip}" for ip in ips)
    return _sign_leaf(d, d / "openssl.cnf", name, f"/CN={cn}",
                      f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n"
                      "keyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=CA:FALSE\n")


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(path: Path, server: str, ca_cert: Path, user: str, *,
                     client: ClientCert | None = None, token: str | None = None) -> Path:
    """Write a self-contained kubeconfig (certificates embedded) for one user; return its path."""
    credentials: dict[str, str] = {}
    if client is not None:
        credentials = {"client-certificate-data": _b64(client.cert), "client-key-data": _b64(client.key)}
    if token is not None:
        credentials["token"] = token
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "devcluster",
                      "cluster": {"server": server, "certificate-authority-data": _b64(ca_cert)}}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": "devcluster", "context": {"cluster": "devcluster", "user": user}}],
        "current-context": "devcluster",
        "preferences": {},
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
