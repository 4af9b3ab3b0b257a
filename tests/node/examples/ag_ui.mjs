import { HttpAgent } from "@ag-ui/client";

// The stock agent: POST /ag-ui takes what it sends. Its thread is an agentrt session, so a
// second question on it is read against the first. (With a token: `headers: { Authorization:
// "Bearer …" }`; a strategy: `runAgent({ forwardedProps: { strategy: "…" } })`.)
const agent = new HttpAgent({ url: "http://127.0.0.1:8000/ag-ui" });
agent.addMessage({ id: "q1", role: "user", content: "What is 1234 + 5678?" });
const { result } = await agent.runAgent();
for (const m of agent.messages) {
  if (m.role === "assistant" && m.content) console.log(m.content);
  for (const call of m.toolCalls ?? []) console.log(call.function.name, call.function.arguments);
  if (m.role === "tool") console.log("→", m.content);
}
console.log(result.status, result.answer);
