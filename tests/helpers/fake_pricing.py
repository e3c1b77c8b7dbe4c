"""A loopback fake of the AWS Pricing API (moto has no `pricing` service): it speaks the API's
JSON 1.1 protocol (POST /, X-Amz-Target: AWSPriceListService.GetProducts) and answers from a
small table the way the real service does (PriceList: JSON documents as strings)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def product(instance_type: str, region: str, usd: float) -> str:
    dim = {"unit": "Hrs", "pricePerUnit": {"USD": f"{usd:.10f}"},
           "description": f"${usd} per On Demand Linux {instance_type} Instance Hour"}
    return json.dumps({
        "product": {"productFamily": "Compute Instance",
                    "attributes": {"instanceType": instance_type, "regionCode": region,
                                   "operatingSystem": "Linux"}},
        "serviceCode": "AmazonEC2",
        "terms": {"OnDemand": {"T1.JRTCKXETXF": {"priceDimensions": {
            "T1.JRTCKXETXF.6YS6EN2CT7": dim}}}}})


@contextmanager
def serve(prices: dict[tuple[str, str], float]) -> Iterator[tuple[str, list[dict]]]:
    """(endpoint URL, the requests it received) while the server runs."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
            seen.append({"target": self.headers.get("X-Amz-Target"), "body": body})
            if self.headers.get("X-Amz-Target") != "AWSPriceListService.GetProducts":
                return self._send(400, {"__type": "InvalidParameterException",
                                        "message": "unknown operation"})
            f = {x["Field"]: x["Value"] for x in body.get("Filters", [])}
            key = (f.get("instanceType"), f.get("regionCode"))
            found = [product(key[0], key[1], prices[key])] if key in prices else []
            self._send(200, {"FormatVersion": "aws_v1", "PriceList": found})

        def _send(self, code: int, doc: dict) -> None:
            data = json.dumps(doc).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/x-amz-json-1.1")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
