// The official TypeScript SDK's client (1.32.2, pinned with the conformance suite) driving a
// 2025-11-25 tasks server: node ts_tasks_client.mjs SDK_DIR URL.  Prints one JSON object with
// what it saw; the Python test judges it (tests/test_tasks_typescript.py).
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdk, url] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdk, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { ElicitRequestSchema, CallToolResultSchema, CreateTaskResultSchema } = await load("types.js");

const client = new Client(
  { name: "ts-tasks", version: "1" },
  { capabilities: { elicitation: { form: {} } } },
);
const elicited = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  elicited.push(req.params._meta?.["io.modelcontextprotocol/related-task"]?.taskId ?? null);
  return { action: "accept", content: {} };
});
const notes = [];
client.fallbackNotificationHandler = async (n) => notes.push(n.method);
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const out = { capabilities: client.getServerCapabilities() };
const tools = await client.listTools();
out.taskSupport = Object.fromEntries(tools.tools.map((t) => [t.name, t.execution?.taskSupport ?? null]));

async function stream(name, args) {
  const seen = [];
  for await (const m of client.experimental.tasks.callToolStream(
    { name, arguments: args },
    undefined,
    { task: { ttl: 30000 } },
  )) {
    if (m.type === "taskCreated") seen.push(["taskCreated", m.task.taskId, m.task.status]);
    else if (m.type === "taskStatus") seen.push(["taskStatus", m.task.taskId, m.task.status]);
    else if (m.type === "result") seen.push(["result", m.result.content?.[0]?.text ?? null]);
    else seen.push(["error", String(m.error?.message ?? m.error)]);
  }
  return seen;
}

out.job = await stream("job", { label: "ts", seconds: 0.3 });
const jobId = out.job[0][1];
out.get = (await client.experimental.tasks.getTask(jobId)).status;
out.result = (await client.experimental.tasks.getTaskResult(jobId, CallToolResultSchema)).content?.[0]?.text ?? null;
out.listed = (await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId);
out.confirm = await stream("confirm", { label: "ts" });
out.elicited = elicited;
const created = await client.request(
  {
    method: "tools/call",
    params: { name: "stubborn", arguments: { label: "c", seconds: 0.3 }, task: { ttl: 30000 } },
  },
  CreateTaskResultSchema,
);
out.cancel = (await client.experimental.tasks.cancelTask(created.task.taskId)).status;
await new Promise((r) => setTimeout(r, 800));
out.afterCancel = (await client.experimental.tasks.getTask(created.task.taskId)).status;
out.notifications = notes;
await client.close();
console.log(JSON.stringify(out));
