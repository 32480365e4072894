// A frontend tool's round trip with the official AG-UI client (tests/web/test_client_tools.py).
//
// usage: node ag_ui_frontend_tool.mjs <url of POST /ag-ui> <threadId>
//
// The first run offers the tool `showNotice` and some context with the prompt "notify hi";
// the model calls the tool, and the run ends with the call left for the application. The
// script answers each call the run left (`pendingToolCallIds`) with a tool message, as an
// application runs its frontend tools, and runs the agent again. It prints what it saw as
// JSON: per run the event types (runs of deltas counted once) and the pending calls, the
// calls it answered, and the agent's messages at the end.
import { HttpAgent } from "@ag-ui/client";

const [url, threadId] = process.argv.slice(2);
const tools = [{
  name: "showNotice",
  description: "Show a notice to the user.",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
}];

const agent = new HttpAgent({ url, threadId });
agent.addMessage({ id: "u1", role: "user", content: "notify hi" });

function watch(run) {
  return {
    onEvent({ event }) {
      const last = run.events[run.events.length - 1];
      const delta = event.type.endsWith("_CONTENT") || event.type.endsWith("_ARGS");
      if (!(delta && last === event.type)) run.events.push(event.type);
    },
    onRunFinishedEvent(params) {
      run.pending = params.pendingToolCallIds ?? [];
    },
    onRunFailed({ error }) {
      run.error = String(error);
    },
  };
}

const runs = [];
const answered = [];
for (const params of [{ tools, context: [{ description: "Page", value: "settings" }] },
                      { tools }]) {
  const run = { events: [], pending: null };
  runs.push(run);
  await agent.runAgent(params, watch(run));
  for (const id of run.pending ?? []) {
    const call = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === id);
    const args = JSON.parse(call.function.arguments);
    answered.push({ toolCallId: id, args });
    agent.addMessage({ id: `result-${id}`, role: "tool", toolCallId: id,
                       content: `shown: ${args.text}` });
  }
  if (run.pending === null || run.pending.length === 0) break;
}

console.log(JSON.stringify({ runs, answered, messages: agent.messages }));
