// Reads agentcore.web's `POST /api/chat` with the Vercel AI SDK's own code (`ai`), for
// tests/web/test_ai_sdk.py. Usage: node ai_sdk_reader.mjs <base url> <spec as JSON>
//
// {"mode": "read", "requests": [{"body": {...}, "abortAfter"?: <chunk type>}, ...]}
//   POSTs each body in turn and reads the reply as `DefaultChatTransport` does
//   (`parseJsonEventStream` with `uiMessageChunkSchema`), then builds the UI message with
//   `readUIMessageStream`; `abortAfter` aborts the fetch once a chunk of that type arrived.
//   Prints [{status, headers, chunks: [chunk types], message, errors, aborted, valid}, ...].
//
// {"mode": "chat", "id": <chat id>, "steps": [{"send": <text>} | {"approve": bool, "reason"?}]}
//   Drives the SDK's `AbstractChat` (what useChat wraps) with a `DefaultChatTransport`:
//   `sendMessage` for a text, `addToolApprovalResponse` on the first call waiting for
//   approval (once none waits, the chat sends the answers:
//   `lastAssistantMessageIsCompleteWithApprovalResponses`).
//   Prints {messages, finishes: [{finishReason, isError, isAbort}], errors, status}.

import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  parseJsonEventStream,
  readUIMessageStream,
  safeValidateUIMessages,
  uiMessageChunkSchema,
} from "ai";

const [base, specText] = process.argv.slice(2);
const spec = JSON.parse(specText);

async function read({ body, abortAfter }) {
  const controller = new AbortController();
  const response = await fetch(`${base}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  const headers = Object.fromEntries(response.headers.entries());
  if (!response.ok) {
    return { status: response.status, headers, body: await response.text() };
  }
  const chunks = [];
  const errors = [];
  let aborted = false;
  const stream = parseJsonEventStream({ stream: response.body, schema: uiMessageChunkSchema })
    .pipeThrough(new TransformStream({
      transform(chunk, out) {
        if (!chunk.success) throw chunk.error; // as DefaultChatTransport does
        chunks.push(chunk.value.type);
        out.enqueue(chunk.value);
        if (chunk.value.type === abortAfter && !aborted) {
          aborted = true;
          controller.abort();
        }
      },
    }));
  let message;
  for await (const snapshot of readUIMessageStream({
    stream,
    onError: (error) => errors.push(String(error?.message ?? error)),
  })) {
    message = snapshot;
  }
  const validation = message && await safeValidateUIMessages({ messages: [message] });
  return {
    status: response.status, headers, chunks, message, errors, aborted,
    valid: validation ? validation.success : null,
  };
}

class State {
  constructor() {
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
  }
  pushMessage(message) { this.messages = [...this.messages, message]; }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(index, message) {
    this.messages = this.messages.map((m, i) => (i === index ? message : m));
  }
  snapshot(thing) { return structuredClone(thing); }
}

async function chat({ id, steps }) {
  const finishes = [];
  const errors = [];
  let finished;
  const chatClient = new AbstractChat({
    id,
    state: new State(),
    transport: new DefaultChatTransport({ api: `${base}/api/chat` }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onError: (error) => errors.push(String(error?.message ?? error)),
    onFinish: ({ finishReason, isError, isAbort }) => {
      finishes.push({ finishReason: finishReason ?? null, isError, isAbort });
      finished?.();
    },
  });
  for (const step of steps) {
    if (step.send !== undefined) {
      await chatClient.sendMessage({ text: step.send });
      continue;
    }
    const waiting = () => chatClient.messages.at(-1).parts.filter(
      (part) => part.state === "approval-requested");
    const done = new Promise((resolve) => { finished = resolve; });
    await chatClient.addToolApprovalResponse({
      id: waiting()[0].approval.id, approved: step.approve, reason: step.reason,
    });
    if (waiting().length === 0) await done; // the last answer sends them: wait for the reply
  }
  return { messages: chatClient.messages, finishes, errors, status: chatClient.status };
}

let result;
if (spec.mode === "read") {
  result = [];
  for (const request of spec.requests) result.push(await read(request));
} else {
  result = await chat(spec);
}
process.stdout.write(JSON.stringify(result));
