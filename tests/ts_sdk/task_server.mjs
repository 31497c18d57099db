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
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import * as z from 'zod/v4';
import { listen, sessionRoutes } from './stateful_http.mjs';

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
sessionRoutes(app, getServer);
listen(app, port);
