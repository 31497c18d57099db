-- wrk script: one tools/call "echo" per request, each with its own JSON-RPC id.
--
--   wrk -t1 -c10 -d10s -s bench/wrk_call.lua URL -- [SESSION_ID] [TEXT]
--
-- SESSION_ID (or "-" for none) goes in Mcp-Session-Id with MCP-Protocol-Version 2025-11-25.
-- Ids are "<thread>-<n>" strings, unique over the run.  Every response is checked here: a 200
-- whose body carries a result (not an error) with the echoed text.  done() prints one line
--   WRKRESULT {json}
-- with the counts and the latency percentiles (microseconds) for bench/runtime.py to read.

local threads = {}
local counter = 1

function setup(thread)
   thread:set("tid", counter)
   table.insert(threads, thread)
   counter = counter + 1
end

function init(args)
   sid = args[1]
   text = args[2] or "hello"
   n = 0
   ok = 0
   bad_status = 0
   bad_body = 0
   local headers = {
      ["Content-Type"] = "application/json",
      ["Accept"] = "application/json, text/event-stream",
   }
   if sid ~= nil and sid ~= "-" then
      headers["Mcp-Session-Id"] = sid
      headers["MCP-Protocol-Version"] = "2025-11-25"
   end
   req_headers = headers
   expect = '"text":"' .. text .. '"'
end

function request()
   n = n + 1
   local body = '{"jsonrpc":"2.0","id":"' .. tid .. '-' .. n ..
      '","method":"tools/call","params":{"name":"echo","arguments":{"text":"' .. text .. '"}}}'
   return wrk.format("POST", nil, req_headers, body)
end

function response(status, headers, body)
   if status ~= 200 then
      bad_status = bad_status + 1
   elseif string.find(body, '"result"', 1, true) == nil
       or string.find(body, '"error"', 1, true) ~= nil
       or string.find(body, expect, 1, true) == nil then
      bad_body = bad_body + 1
   else
      ok = ok + 1
   end
end

function done(summary, latency, requests)
   local sent, good, bs, bb = 0, 0, 0, 0
   for _, t in ipairs(threads) do
      sent = sent + t:get("n")
      good = good + t:get("ok")
      bs = bs + t:get("bad_status")
      bb = bb + t:get("bad_body")
   end
   io.write(string.format(
      'WRKRESULT {"requests":%d,"duration_us":%d,"sent":%d,"ok":%d,"bad_status":%d,"bad_body":%d,' ..
      '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"status_errors":%d,"timeouts":%d,' ..
      '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f}\n',
      summary.requests, summary.duration, sent, good, bs, bb,
      summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.status,
      summary.errors.timeout,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
