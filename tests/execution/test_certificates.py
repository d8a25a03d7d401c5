"""The CA bundle the runner's builds trust (hosts behind TLS inspection): where it goes in a Dockerfile,
and, on the real engine, pip inside a build reaching an index whose certificate only that CA signs."""

from __future__ import annotations

import pytest

from runner.execution.certificates import (
    BUNDLE_NAME,
    TARGET,
    VARIABLES,
    BadBundle,
    add_to_context,
    after_each_from,
    read_bundle,
)

PEM = b"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\nAAAA==\n-----END CERTIFICATE-----\n"
TAKE = [f"COPY {BUNDLE_NAME} {TARGET}", "ENV " + " ".join(f"{name}={TARGET}" for name in VARIABLES)]


def test_each_stage_takes_the_bundle_right_after_its_from():
    dockerfile = "ARG BASE\nFROM ${BASE} AS build\nRUN make\nfrom scratch\nCOPY --from=build /a /a\n"
    assert after_each_from(dockerfile).splitlines() == [
        "ARG BASE", "FROM ${BASE} AS build", *TAKE, "RUN make", "from scratch", *TAKE, "COPY --from=build /a /a"]


def test_a_from_continued_over_lines_takes_it_after_its_last_line_and_other_instructions_are_not_froms():
    dockerfile = "FROM --platform=linux/amd64 \\\n  python:3.11-slim\nRUN echo \\\n  FROM x\n# FROM y\n"
    assert after_each_from(dockerfile).splitlines() == [
        "FROM --platform=linux/amd64 \\", "  python:3.11-slim", *TAKE, "RUN echo \\", "  FROM x", "# FROM y"]


def test_the_escape_directive_decides_what_continues_a_line():
    dockerfile = "# escape=`\nFROM base `\n  AS one\nRUN dir c:\\\nRUN echo\n"
    assert after_each_from(dockerfile).splitlines() == [
        "# escape=`", "FROM base `", "  AS one", *TAKE, "RUN dir c:\\", "RUN echo"]


def test_the_context_copy_gets_the_bundle_and_keeps_it_past_a_dockerignore(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM base\n")
    (tmp_path / ".dockerignore").write_text("*\n!requirements.txt")
    add_to_context(tmp_path, PEM)
    assert (tmp_path / BUNDLE_NAME).read_bytes() == PEM
    assert (tmp_path / ".dockerignore").read_text() == f"*\n!requirements.txt\n!{BUNDLE_NAME}\n"
    assert (tmp_path / "Dockerfile").read_text().splitlines() == ["FROM base", *TAKE]


def test_a_bundle_keeps_only_its_certificates(tmp_path):
    path = tmp_path / "bundle.pem"
    path.write_bytes(b"# Organization CA\n" + PEM + b"junk\n" + PEM)
    assert read_bundle(path) == PEM.rstrip(b"\n") + b"\n" + PEM


@pytest.mark.parametrize("content, message", [
    (b"not a certificate", "no PEM certificate (-----BEGIN CERTIFICATE-----) in it"),
    (None, "No such file or directory"),
])
def test_a_file_that_is_not_a_bundle_is_refused_naming_it(tmp_path, content, message):
    path = tmp_path / "bundle.pem"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(BadBundle) as refused:
        read_bundle(path)
    assert str(refused.value) == f"{path}: {message}"


# --- on the real engine: an index only the organization's CA vouches for ---------------------------


def organization_ca(host: str) -> tuple[bytes, bytes, bytes]:
    """A CA (as a TLS-inspecting proxy has), and a certificate it signs for `host`: (CA PEM, cert PEM, key PEM)."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.UTC)

    def certificate(subject: str, key, issuer: str, signer, *, ca: bool):
        builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ca:
            builder = builder.add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
                decipher_only=False), critical=True)
        else:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]),
                                            critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = certificate("Hospital inspection CA", ca_key, "Hospital inspection CA", ca_key, ca=True)
    server = certificate(host, server_key, "Hospital inspection CA", ca_key, ca=False)
    pem = serialization.Encoding.PEM
    key = server_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return ca.public_bytes(pem), server.public_bytes(pem), key


def wheel(folder, name: str, module: str) -> None:
    """A pure-Python wheel of one module, written as pip expects one (a zip with its dist-info)."""
    import base64
    import hashlib
    import zipfile

    info = f"{name}-1.0.dist-info"
    files = {f"{name}.py": module, f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}

    def digest(text: str) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()

    record = "".join(f"{path},sha256={digest(text)},{len(text.encode())}\n" for path, text in files.items())
    record += f"{info}/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{name}-1.0-py3-none-any.whl", "w") as archive:
        for path, text in {**files, f"{info}/RECORD": record}.items():
            archive.writestr(path, text)


@pytest.fixture
def inspected_index(docker_client, tmp_path):
    """A package index on the engine's bridge, over TLS with a certificate only the organization's CA
    signs (as a proxy that inspects TLS re-signs pypi.org): (its URL, the CA bundle)."""
    import functools
    import http.server
    import ipaddress
    import ssl
    import threading

    subnet = docker_client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    host = subnet.get("Gateway") or str(ipaddress.ip_network(subnet["Subnet"])[1])
    ca, cert, key = organization_ca(host)
    (tmp_path / "cert.pem").write_bytes(cert + key)
    project = tmp_path / "index" / "simple" / "tinypkg"
    project.mkdir(parents=True)
    wheel(project, "tinypkg", 'WHERE = "installed from the index"\n')
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "index"))
    server = http.server.ThreadingHTTPServer((host, 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"https://{host}:{server.server_address[1]}/simple/", ca
    finally:
        server.shutdown()


PIP_USER = """ARG BASE
FROM ${BASE}
RUN groupadd -r user && useradd -m --no-log-init -r -g user user
USER user
ARG INDEX
RUN python -m pip install --user --no-cache-dir --retries 0 --timeout 20 --index-url ${INDEX} tinypkg
ENTRYPOINT ["python", "-c", "import tinypkg; print(tinypkg.WHERE)"]
"""


@pytest.mark.docker
def test_pip_in_a_build_trusts_the_ca_the_runner_is_given(docker_client, engine, base_image, inspected_index, tmp_path):
    from runner.execution.docker_engine import DockerEngine
    from runner.execution.sandbox import RunSpec, SandboxError

    index, ca = inspected_index
    folder = tmp_path / "evaluation"
    folder.mkdir()
    (folder / "Dockerfile").write_text(PIP_USER)
    with pytest.raises(SandboxError, match="No matching distribution found for tinypkg"):
        engine.build(folder, name="challenge-test/pip-user", base=base_image, args={"INDEX": index})
    with DockerEngine(docker_client, keeper_image=base_image, build_certificates=ca) as trusting:
        image = trusting.build(folder, name="challenge-test/pip-user", base=base_image, args={"INDEX": index})
        outcome = trusting.run(RunSpec(image=image, user=trusting.run_as(image)))
    assert outcome.ok, outcome.stderr_tail
    assert outcome.stdout_tail == ["installed from the index"]
    assert (folder / "Dockerfile").read_text() == PIP_USER  # the organizer's file is left as it was
