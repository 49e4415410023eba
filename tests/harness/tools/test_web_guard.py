"""The SSRF guard against real HTTP on loopback: with the allow-list off every private
form is refused before a byte is sent; with it on, the test server is reachable and the
rules that stay (metadata, schemes, redirect hops, size, deadline) still hold."""

import ipaddress

import httpx
import pytest

from harness.net import BlockedURL, FetchTimeout, GuardError, GuardPolicy, ResponseTooLarge, address_problem, guarded_client, guarded_fetch
from harness.net.guard import literal_address

LOOPBACK = GuardPolicy.from_networks(["127.0.0.0/8", "::1/128"])

FORBIDDEN = [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("10.0.0.7", "private"), ("172.16.5.4", "private"),
    ("192.168.1.1", "private"), ("fc00::1", "private"), ("169.254.10.10", "link-local"), ("fe80::1", "link-local"),
    ("100.64.0.1", "carrier-grade NAT"), ("224.0.0.251", "multicast"), ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"), ("::", "unspecified"), ("169.254.169.254", "metadata"), ("fd00:ec2::254", "metadata"),
    ("100.100.100.200", "metadata"), ("::ffff:127.0.0.1", "loopback"), ("::ffff:10.1.1.1", "private"),
    ("::ffff:169.254.169.254", "metadata"), ("64:ff9b::a00:1", "private"), ("240.0.0.1", "reserved"),
]


@pytest.mark.parametrize("address,kind", FORBIDDEN)
def test_forbidden_addresses_are_named(address, kind):
    problem = address_problem(ipaddress.ip_address(address))
    assert problem is not None and kind in problem


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:4700::1111", "::ffff:8.8.8.8", "1.1.1.1"])
def test_public_addresses_pass(address):
    assert address_problem(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize("host", ["2130706433", "0177.0.0.1", "0x7f.0.0.1", "0x7f000001", "127.1", "017700000001"])
def test_decimal_octal_and_hex_hosts_are_the_loopback_address(host):
    assert literal_address(host) == ipaddress.ip_address("127.0.0.1")


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:{port}/article", "http://localhost:{port}/article", "http://2130706433:{port}/article",
    "http://0177.0.0.1:{port}/article", "http://0x7f.1:{port}/article", "http://[::ffff:127.0.0.1]:{port}/article",
    "http://[::1]:{port}/article",
])
async def test_loopback_in_every_form_is_refused_without_the_allow_list(fake_web, url):
    port = fake_web.base.rsplit(":", 1)[1]
    # httpx itself rejects some spellings (leading-zero octal) as invalid: refused either way
    with pytest.raises(BlockedURL, match="loopback|Invalid IPv4"):
        await guarded_fetch(url.format(port=port))
    assert fake_web.requests == []


@pytest.mark.parametrize("url,match", [
    ("file:///etc/passwd", "file://"), ("gopher://127.0.0.1:70/", "gopher://"), ("ftp://example.org/x", "ftp://"),
    ("http://user:pw@example.org/", "user name"), ("http:///nohost", "no host"),
])
async def test_only_plain_http_urls(url, match):
    with pytest.raises(BlockedURL, match=match):
        await guarded_fetch(url, policy=LOOPBACK)


async def test_allow_list_opens_the_test_server_and_follows_allowed_redirects(fake_web):
    result = await guarded_fetch(f"{fake_web.base}/redirect", policy=LOOPBACK)
    assert result.status_code == 200
    assert result.final_url == f"{fake_web.base}/article"
    assert result.redirects == [f"{fake_web.base}/redirect", f"{fake_web.base}/hop1"]
    assert b"Rainfall in Lisbon" in result.content


async def test_allow_list_never_opens_cloud_metadata():
    policy = GuardPolicy.from_networks(["169.254.0.0/16", "0.0.0.0/0"])
    with pytest.raises(BlockedURL, match="metadata"):
        await guarded_fetch("http://169.254.169.254/latest/meta-data/", policy=policy)


async def test_redirect_to_metadata_is_refused_at_that_hop(fake_web):
    with pytest.raises(BlockedURL, match="169.254.169.254 is a cloud metadata address"):
        await guarded_fetch(f"{fake_web.base}/redirect-metadata", policy=LOOPBACK)
    assert fake_web.hits("/redirect-metadata") == 1


async def test_redirect_to_a_private_address_outside_the_allow_list(fake_web):
    only_this_server = GuardPolicy.from_networks(["127.0.0.1/32"])
    port = fake_web.base.rsplit(":", 1)[1]
    # the first hop is allowed; /hop1 is fine too, but a 127.0.0.2 target is not listed
    with pytest.raises(BlockedURL, match="127.0.0.2 is a loopback address"):
        await guarded_fetch(f"http://127.0.0.2:{port}/article", policy=only_this_server)


async def test_redirect_to_file_scheme_is_refused(fake_web):
    with pytest.raises(BlockedURL, match="scheme"):
        await guarded_fetch(f"{fake_web.base}/redirect-file", policy=LOOPBACK)


async def test_at_most_five_redirects(fake_web):
    with pytest.raises(GuardError, match="more than 5 redirects"):
        await guarded_fetch(f"{fake_web.base}/loop/0", policy=LOOPBACK)
    assert fake_web.hits("/loop/5") == 1 and fake_web.hits("/loop/6") == 0


async def test_body_over_the_cap_is_cut_off_while_streaming(fake_web):
    with pytest.raises(ResponseTooLarge, match="1,048,576-byte limit"):
        await guarded_fetch(f"{fake_web.base}/huge", policy=LOOPBACK, max_bytes=1024 * 1024)


async def test_declared_two_gigabytes_is_refused_before_reading(fake_web):
    with pytest.raises(ResponseTooLarge, match="2,147,483,648 bytes"):
        await guarded_fetch(f"{fake_web.base}/huge-declared", policy=LOOPBACK)


async def test_a_page_that_never_ends_hits_the_total_deadline(fake_web):
    # bytes keep arriving, so no per-read timeout fires; only the total deadline ends it
    with pytest.raises(FetchTimeout, match="within 1 seconds"):
        await guarded_fetch(f"{fake_web.base}/never-ends", policy=LOOPBACK, timeout=1)


async def test_connects_to_the_checked_address_not_a_second_lookup(fake_web):
    """``rebind.test`` exists only in this resolver: the request reaches the server, so the
    connection used the checked answer and never asked the system resolver again."""
    calls = []

    async def resolver(host, port):
        calls.append(host)
        return ["127.0.0.1"]

    port = fake_web.base.rsplit(":", 1)[1]
    result = await guarded_fetch(f"http://rebind.test:{port}/article", policy=LOOPBACK, resolver=resolver)
    assert result.status_code == 200
    assert calls == ["rebind.test"]
    assert fake_web.requests[-1]["headers"]["Host"] == f"rebind.test:{port}"


async def test_a_name_with_any_private_answer_is_refused(fake_web):
    async def resolver(host, port):
        return ["93.184.215.14", "10.0.0.5"]

    with pytest.raises(BlockedURL, match="10.0.0.5"):
        await guarded_fetch("http://mixed.test/", resolver=resolver)


async def test_guarded_client_checks_every_request(fake_web):
    async with guarded_client() as client:
        with pytest.raises(BlockedURL):
            await client.get(f"{fake_web.base}/article")
    async with guarded_client(LOOPBACK) as client:
        response = await client.get(f"{fake_web.base}/redirect")
        assert response.status_code == 200 and isinstance(response, httpx.Response)


@pytest.fixture
def tls_server(tmp_path):
    """An HTTPS server on 127.0.0.1 whose certificate names only ``secure.test``."""
    import http.server
    import shutil
    import ssl
    import subprocess
    import threading

    if not shutil.which("openssl"):
        pytest.skip("needs the openssl command to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=secure.test",
                    "-addext", "subjectAltName=DNS:secure.test", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = f"hello {self.headers['Host']}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd.server_address[1], cert
    httpd.shutdown()
    httpd.server_close()


async def test_https_to_the_pinned_address_still_verifies_the_host_name(tls_server):
    import ssl

    from harness.net import GuardedTransport

    port, cert = tls_server

    async def resolver(host, port):
        return ["127.0.0.1"]

    trust = ssl.create_default_context(cafile=str(cert))
    transport = GuardedTransport(LOOPBACK, resolver=resolver, verify=trust)
    async with httpx.AsyncClient(transport=transport) as client:
        response = await client.get(f"https://secure.test:{port}/")
        assert response.status_code == 200 and response.text == f"hello secure.test:{port}"
        # same address, another name: the certificate is checked against the name, not the IP
        with pytest.raises(httpx.ConnectError, match="certificate verify failed|Hostname mismatch"):
            await client.get(f"https://other.test:{port}/")
