"""GitHub for the webhook tests: signed deliveries as GitHub sends them, and a local REST API
that takes issue comments (``POST /repos/{owner}/{repo}/issues/{number}/comments``)."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = "webhook-secret-for-tests"
API_TOKEN = "ghp_test_token"
BOT_LOGIN = "deerflow-bot"


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def delivery_headers(event: str, body: bytes, *, secret: str = SECRET, delivery: str | None = None) -> dict[str, str]:
    """What GitHub puts on a delivery, in Django test client spelling."""
    return {"HTTP_X_GITHUB_EVENT": event, "HTTP_X_GITHUB_DELIVERY": delivery or str(uuid.uuid4()),
            "HTTP_X_HUB_SIGNATURE_256": sign(secret, body), "HTTP_USER_AGENT": "GitHub-Hookshot/test"}


_ids = itertools.count(1000)


def user(login: str, uid: int, kind: str = "User") -> dict:
    return {"login": login, "id": uid, "type": kind, "html_url": f"https://github.com/{login}"}


def issue_comment(body: str, *, login: str = "octocat", uid: int = 583231, repo: str = "octo/hello",
                  number: int = 7, title: str = "Crash on empty input", pull_request: bool = False) -> dict:
    comment_id = next(_ids)
    issue = {"number": number, "title": title, "html_url": f"https://github.com/{repo}/issues/{number}",
             "user": user("reporter", 1), "state": "open"}
    if pull_request:
        issue["pull_request"] = {"url": f"https://api.github.com/repos/{repo}/pulls/{number}"}
    return {"action": "created", "issue": issue,
            "comment": {"id": comment_id, "body": body, "user": user(login, uid),
                        "html_url": f"https://github.com/{repo}/issues/{number}#issuecomment-{comment_id}"},
            "repository": {"full_name": repo, "html_url": f"https://github.com/{repo}"}, "sender": user(login, uid)}


def review_comment(body: str, *, login: str = "octocat", uid: int = 583231, repo: str = "octo/hello", number: int = 12,
                   path: str = "src/parse.py", line: int = 40) -> dict:
    comment_id = next(_ids)
    return {"action": "created",
            "pull_request": {"number": number, "title": "Parser rewrite", "html_url": f"https://github.com/{repo}/pull/{number}"},
            "comment": {"id": comment_id, "body": body, "user": user(login, uid), "path": path, "line": line,
                        "html_url": f"https://github.com/{repo}/pull/{number}#discussion_r{comment_id}"},
            "repository": {"full_name": repo}, "sender": user(login, uid)}


class FakeGitHubAPI:
    def __init__(self) -> None:
        self.comments: list[dict] = []  # {"repo", "number", "body", "auth"}

    def start(self) -> FakeGitHubAPI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                parts = self.path.strip("/").split("/")
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.headers.get("Authorization") != f"Bearer {API_TOKEN}":
                    return self._answer(401, {"message": "Bad credentials"})
                if len(parts) == 6 and parts[0] == "repos" and parts[3] == "issues" and parts[5] == "comments":
                    fake.comments.append({"repo": f"{parts[1]}/{parts[2]}", "number": int(parts[4]), "body": body["body"]})
                    return self._answer(201, {"id": next(_ids), "body": body["body"]})
                return self._answer(404, {"message": "Not Found"})

            def _answer(self, status: int, data: dict) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
