"""A stand-in server for the examples' offline runs: serves one handler on 127.0.0.1, then stops.

Not an example itself: the provider examples import it (`from _stand_in import ...`), which
works when they run as scripts (their directory is on `sys.path`).
"""

import contextlib
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing, so that the output is the agent's alone."""

    def log_message(self, format, *args):
        pass


@contextlib.contextmanager
def stand_in(handler):
    """Serve `handler` in a thread on a free port; yield its `http://127.0.0.1:<port>` URL.

    On leaving, the server is shut down and its thread joined: nothing outlives the example.
    """
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name=f"stand-in-{handler.__name__}")
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
