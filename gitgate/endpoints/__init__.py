"""The loop's HTTP endpoints: Starlette routes served by uvicorn (llhttp's strict parser) on
their own event loop, with the bounds each connection is held to and the web page's sign-in
(a token file, signed session cookies, a per-address throttle)."""
