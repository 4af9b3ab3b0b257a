// Reads a run from `agentrt serve` with a UI toolkit's own client, and prints what the client
// made of it as one JSON object on stdout (tests/server/test_ui_protocols.py asserts on it).
//
//   node read_streams.mjs vercel <server url> run <query> <strategy>
//     the AI SDK's DefaultChatTransport posts the question, readUIMessageStream assembles the
//     assistant message: prints {message, errors}
//   node read_streams.mjs vercel <server url> replay <run id>
//     the same transport reconnects to a run (GET /runs/{id}/events), live or recorded
//   node read_streams.mjs ag-ui <server url> run <query> <strategy>
//     @ag-ui/client's HttpAgent, as it comes (POST /ag-ui), runs it (its event checks
//     included): prints {result, messages, state, events, end} (end: the RUN_FINISHED or
//     RUN_ERROR event)
//   node read_streams.mjs ag-ui <server url> thread <query> <query> <strategy>
//     the same agent runs one question, then the next on the same thread: prints
//     {threadId, runs: [{runId, result, events, end}, …], messages}
//   node read_streams.mjs ag-ui <server url> replay <run id>
//     the agent reads a run again (GET /runs/{id}/events?protocol=ag-ui)
//
// With AGENTRT_TOKEN set, the agents send it as a bearer token.
import { HttpAgent } from "@ag-ui/client";
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [protocol, server, mode, ...rest] = process.argv.slice(2);
const [query, strategy] = rest;
const runId = rest[0];
const token = process.env.AGENTRT_TOKEN;
const headers = token ? { Authorization: `Bearer ${token}` } : {};

async function readVercel() {
  const transport = new DefaultChatTransport({
    api: `${server}/runs?protocol=vercel`,
    // agentrt takes the question, not the chat: send the last user message's text.
    prepareSendMessagesRequest: ({ messages }) => ({
      body: {
        query: messages.at(-1).parts.map((p) => (p.type === "text" ? p.text : "")).join(""),
        strategy,
      },
    }),
    // Resuming a chat's stream is reading its run again: the chat's id is the run's.
    prepareReconnectToStreamRequest: ({ id }) => ({
      api: `${server}/runs/${id}/events?protocol=vercel`,
    }),
  });
  const stream =
    mode === "replay"
      ? await transport.reconnectToStream({ chatId: runId })
      : await transport.sendMessages({
          chatId: "chat",
          trigger: "submit-message",
          messageId: undefined,
          abortSignal: undefined,
          messages: [{ id: "q1", role: "user", parts: [{ type: "text", text: query }] }],
        });
  let message;
  const errors = [];
  for await (const m of readUIMessageStream({ stream, onError: (e) => errors.push(e.message) })) {
    message = m;
  }
  return { message, errors };
}

// A run read again: a GET of its events, nothing posted.
class ReplayAgent extends HttpAgent {
  requestInit(input) {
    const { body, ...init } = super.requestInit(input);
    return { ...init, method: "GET" };
  }
}

// One run of `agent` on the question: what the client made of it.
async function runOnce(agent, question, strategyName) {
  if (question !== undefined) {
    agent.addMessage({ id: `q${agent.messages.length}`, role: "user", content: question });
  }
  const events = [];
  let end;
  let started;
  const { result } = await agent.runAgent(
    { forwardedProps: strategyName ? { strategy: strategyName } : {} },
    {
      onEvent: ({ event }) => {
        events.push(event.type);
        if (event.type === "RUN_STARTED") started = event;
        if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") end = event;
      },
    },
  );
  return { runId: started?.runId, result, events, end };
}

async function readAgUi() {
  if (mode === "replay") {
    const agent = new ReplayAgent({ url: `${server}/runs/${runId}/events?protocol=ag-ui`, headers });
    const { result, events, end } = await runOnce(agent);
    return { result, messages: agent.messages, state: agent.state, events, end };
  }
  // The stock agent: POST /ag-ui takes the RunAgentInput it sends.
  const agent = new HttpAgent({ url: `${server}/ag-ui`, headers });
  if (mode === "thread") {
    const [first, second, strategyName] = rest;
    const runs = [
      await runOnce(agent, first, strategyName),
      await runOnce(agent, second, strategyName),
    ];
    return { threadId: agent.threadId, runs, messages: agent.messages };
  }
  const { result, events, end } = await runOnce(agent, query, strategy);
  return { result, messages: agent.messages, state: agent.state, events, end };
}

const read = { vercel: readVercel, "ag-ui": readAgUi }[protocol];
if (read === undefined) {
  process.stderr.write(`unknown protocol ${protocol}: vercel or ag-ui\n`);
  process.exit(2);
}
process.stdout.write(JSON.stringify(await read()) + "\n");
