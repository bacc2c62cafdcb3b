"""nginx in front of the API processes, each match's requests sticking to one of them.

Debian's nginx (1.22), installed by ``make cluster`` when missing. The match id
comes from the path (``deploy/nginx/match-id.conf``, the same file the
clustered compose deployment mounts) and picks the API by consistent hashing;
requests about no match are spread round robin. The rest is what the live
streams need of any proxy (deploy/nginx.conf): the WebSocket upgrade, no
buffering and long timeouts on the streams. The API that served a request is
named in the ``X-Matcha-Upstream`` response header (a local harness: nothing
here is hidden from its only user).
"""

from __future__ import annotations

import signal
import urllib.error
import urllib.request
from pathlib import Path

from service.processes import ServerFailed, ServerProcess, spawn, wait_until

NGINX = "/usr/sbin/nginx"
MATCH_ID_CONF = Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "match-id.conf"

_CONF = """\
# Written by service/cluster/proxy.py at each start of `make cluster`: edit that file.
daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 4096; }}

http {{
    access_log {folder}/access.log;
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;

    include {match_id_conf};

    upstream matcha_api {{
        hash $matcha_match_id consistent;
{servers}
        keepalive 32;
    }}

    map $http_upgrade $connection_upgrade {{
        default upgrade;
        ''      '';
    }}

    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 1m;

        proxy_http_version 1.1;
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header Upgrade $http_upgrade;
        proxy_set_header Connection $connection_upgrade;
        add_header X-Matcha-Upstream $upstream_addr always;

        location ~ ^/api/.*/(ws|events/stream|stream)$ {{
            proxy_pass http://matcha_api;
            proxy_buffering off;
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
        }}

        location / {{
            proxy_pass http://matcha_api;
            proxy_read_timeout 30s;
        }}
    }}
}}
"""


def binary_missing() -> str | None:
    return None if Path(NGINX).exists() else f"{NGINX} is missing (apt-get install nginx)"


def write_conf(folder: Path, port: int, api_ports: list[int]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    # a failed API is left out for 2 s, its requests passed to the next in the ring
    servers = "\n".join(
        f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=2s;" for p in api_ports
    )
    conf = folder / "nginx.conf"
    conf.write_text(
        _CONF.format(folder=folder, port=port, servers=servers, match_id_conf=MATCH_ID_CONF)
    )
    return conf


def start_proxy(
    folder: Path, port: int, api_ports: list[int], timeout: float = 30
) -> ServerProcess:
    """nginx on 127.0.0.1:``port`` over the APIs on ``api_ports``; answers once it listens."""
    missing = binary_missing()
    if missing:
        raise ServerFailed(missing)
    folder = folder.resolve()
    conf = write_conf(folder, port, api_ports)
    log = folder / "error.log"
    argv = [NGINX, "-c", str(conf), "-e", str(log)]
    checked = spawn([*argv, "-t", "-q"], stop_signal=signal.SIGTERM)
    if checked.wait(timeout) != 0:
        raise ServerFailed(f"nginx refused {conf}; see {log}")
    # SIGTERM is nginx's fast stop (SIGQUIT would wait for every open stream to end)
    proc = spawn(argv, stop_signal=signal.SIGTERM)
    url = f"http://127.0.0.1:{port}"

    def listens() -> bool:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2):
                return True
        except urllib.error.HTTPError:
            return True  # nginx answered (an API not up yet is a 502): it listens
        except OSError:
            return False

    wait_until(listens, proc, "nginx", log, timeout)
    return ServerProcess(folder, proc, url, log)
