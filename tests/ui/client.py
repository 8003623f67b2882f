"""A browser-like HTTP client for the UI tests."""

from __future__ import annotations

import http.client
import re
from urllib.parse import urlencode, urlsplit

from mnemo.ui import UIServer


class Client:
    """One browser-like client: keeps its session cookie, sends what a same-origin page would send."""

    def __init__(self, ui: UIServer) -> None:
        self.ui = ui
        self.netloc = urlsplit(ui.url).netloc
        self.cookie = ""

    def request(
        self, method: str, path: str, form: dict[str, str] | None = None, **headers: str
    ) -> tuple[int, dict[str, str], str]:
        conn = http.client.HTTPConnection(self.netloc, timeout=10)
        sent = {"Host": self.netloc, **({"Cookie": self.cookie} if self.cookie else {})}
        body = None
        if form is not None:
            body = urlencode(form)
            sent["Content-Type"] = "application/x-www-form-urlencoded"
            sent.setdefault("Origin", self.ui.url)
        sent.update({name.replace("_", "-"): value for name, value in headers.items()})
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        text = response.read().decode()
        got = {k.lower(): v for k, v in response.getheaders()}
        conn.close()
        if "set-cookie" in got:
            self.cookie = got["set-cookie"].split(";")[0]
        return response.status, got, text

    def login(self, token: str) -> Client:
        status, _, _ = self.request("POST", "/login", {"token": token})
        assert status == 303
        return self

    def csrf(self, path: str = "/") -> str:
        _, _, text = self.request("GET", path)
        return re.search(r'name="csrf" value="([^"]+)"', text)[1]
