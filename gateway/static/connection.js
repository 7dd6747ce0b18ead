// The page's one connection to the gateway: the public WebSocket protocol (docs/protocol.md), with
// requests matched to results by id and a reconnect with capped, jittered exponential backoff.

const REQUEST_TIMEOUT_MS = 10000;
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 10000;

export class Connection {
  /**
   * `onHello(hello)` runs on every (re)connection; `onPush(message)` gets `state`, `device` and
   * `close`; `onStatus(status, detail)` reports "connecting", "open" or "waiting".
   */
  constructor(url, { onHello, onPush, onStatus }) {
    this.url = url;
    this.onHello = onHello;
    this.onPush = onPush;
    this.onStatus = onStatus;
    this.ws = null;
    this.nextId = 1;
    this.pending = new Map();
    this.failures = 0;
    this.closeReason = "";
  }

  start() {
    this.onStatus("connecting", "");
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.onmessage = (event) => this._receive(event.data);
    // Failing to connect fires `error` and then `close`; everything is handled on `close`.
    ws.onclose = (event) => this._closed(ws, event);
  }

  /** Send a request; resolves to its `result` message. Never rejects: failures come back as errors. */
  request(op, fields = {}, timeoutMs = REQUEST_TIMEOUT_MS) {
    const id = this.nextId++;
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
      return Promise.resolve(failure(id, "disconnected", "not connected to the gateway"));
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve(failure(id, "timeout", `no answer to ${op} within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      this.pending.set(id, (result) => {
        clearTimeout(timer);
        resolve(result);
      });
      this.ws.send(JSON.stringify({ op, id, ...fields }));
    });
  }

  _receive(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      console.warn("hwgateway: a frame that is not JSON", text.slice(0, 200));
      return;
    }
    if (message.op === "result") {
      const settle = this.pending.get(message.id);
      if (settle) {
        this.pending.delete(message.id);
        settle(message);
      }
    } else if (message.op === "hello") {
      this.failures = 0;
      this.closeReason = "";
      this.onStatus("open", "");
      this.onHello(message);
    } else {
      if (message.op === "close") this.closeReason = `${message.code}: ${message.reason}`;
      this.onPush(message);
    }
  }

  _closed(ws, event) {
    if (ws !== this.ws) return;
    this.ws = null;
    for (const [id, settle] of this.pending) settle(failure(id, "disconnected", "the connection closed"));
    this.pending.clear();
    // Back off so a gateway that is down or restarting is not hammered; jitter spreads many pages.
    const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** this.failures) * (0.8 + 0.4 * Math.random());
    this.failures += 1;
    const why = this.closeReason || (event.code === 1006 ? "connection lost" : `closed (${event.code})`);
    this.onStatus("waiting", `${why}; retrying in ${(delay / 1000).toFixed(1)} s`);
    setTimeout(() => this.start(), delay);
  }
}

function failure(id, code, message) {
  return { op: "result", id, ok: false, error: { code, message } };
}
