// A 2025-11-25 tasks server on the official TypeScript SDK (pinned in package.json), written the
// way the SDK's example is (examples/server/simpleStreamableHttp: one task store shared by every
// session, registerToolTask with out-of-band work): for mcp-inflight's task probe
// (mcp-inflight probe URL --tasks).
//
// node task_server.mjs [--port N]
// Prints "listening on http://127.0.0.1:PORT/mcp" once it accepts connections.
//
// Tool: job {label, seconds} as a task (execution.taskSupport optional): the work completes the
// task `seconds` after it was made with "job:<label>". A completion after a cancel is refused by
// the store (a terminal task keeps its status); the tool logs that refusal instead of letting it
// go unhandled. Nothing here works around the SDK.
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import * as z from 'zod/v4';

const args = process.argv.slice(2);
const portAt = args.indexOf('--port');
const port = portAt >= 0 ? Number(args[portAt + 1]) : 0;

const taskStore = new InMemoryTaskStore();

const getServer = () => {
  const server = new McpServer(
    { name: 'ts-sdk-task-target', version: '1.0.0' },
    {
      capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore,
      taskMessageQueue: new InMemoryTaskMessageQueue(),
    },
  );
  server.experimental.tasks.registerToolTask(
    'job',
    {
      description: 'Complete the task after `seconds` with job:<label>',
      inputSchema: { label: z.string(), seconds: z.number().default(1) },
      execution: { taskSupport: 'optional' },
    },
    {
      async createTask({ label, seconds }, { taskStore, taskRequestedTtl }) {
        const task = await taskStore.createTask({ ttl: taskRequestedTtl });
        (async () => {
          await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
          await taskStore.storeTaskResult(task.taskId, 'completed', {
            content: [{ type: 'text', text: `job:${label}` }],
          });
        })().catch((error) => console.error(`job ${label}: ${error.message}`));
        return { task };
      },
      async getTask(_args, { taskId, taskStore }) {
        return await taskStore.getTask(taskId);
      },
      async getTaskResult(_args, { taskId, taskStore }) {
        return await taskStore.getTaskResult(taskId);
      },
    },
  );
  return server;
};

const app = createMcpExpressApp();
const transports = {};
app.post('/mcp', async (req, res) => {
  const sessionId = req.headers['mcp-session-id'];
  let transport = sessionId ? transports[sessionId] : undefined;
  if (!transport) {
    if (sessionId || !isInitializeRequest(req.body)) {
      res.status(400).json({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided' }, id: null });
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => {
        transports[sid] = transport;
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) delete transports[transport.sessionId];
    };
    await getServer().connect(transport);
  }
  await transport.handleRequest(req, res, req.body);
});
const bySession = async (req, res) => {
  const transport = transports[req.headers['mcp-session-id']];
  if (!transport) {
    res.status(400).send('Invalid or missing session ID');
    return;
  }
  await transport.handleRequest(req, res);
};
app.get('/mcp', bySession);
app.delete('/mcp', bySession);

const listener = app.listen(port, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${listener.address().port}/mcp`);
});
