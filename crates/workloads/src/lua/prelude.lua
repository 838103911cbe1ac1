-- dbperf's sysbench 1.0 API, the Lua half: the tables a sysbench script sees (sysbench.sql,
-- sysbench.error, sysbench.hooks, sysbench.cmdline helpers, the report formatters) built on the
-- primitives dbperf passes in as `raw` (connections, statements and random numbers, in Rust).
-- Errors are raised as sysbench raises them: an ignorable SQL error as a table whose errcode is
-- sysbench.error.RESTART_EVENT (the event runs again), anything else as a message.

local raw = ...

-- `os.exit` would end dbperf itself, with no summary and no report: a script that calls it ends
-- the run instead, as any other error does, and the run keeps what it measured.
os.exit = function(code)
   error(("os.exit(%s) called by the script: dbperf ends the run here and keeps what it measured")
      :format(tostring(code == nil and 0 or code)), 2)
end

-- `require` of a Lua file: package.path searched as Lua's own searcher (the second in
-- package.loaders, replaced here) searches it, the file compiled once for all of the run's
-- states (raw.load_module).
do
   local searchpath = package.searchpath
   package.loaders[2] = function(name)
      local path, err = searchpath(name, package.path)
      if not path then
         return err
      end
      return raw.load_module(name, path)
   end
end

ffi = require("ffi")
-- Types scripts name in their own ffi.cdef blocks (sysbench declares them in its API), and
-- dbperf's own: a bound parameter the script writes itself, a connection's last result.
ffi.cdef[[
typedef enum {
  SB_CNT_OTHER, SB_CNT_READ, SB_CNT_WRITE, SB_CNT_TRX, SB_CNT_ERROR, SB_CNT_RECONNECT, SB_CNT_MAX
} sb_counter_type;
typedef struct {
  int32_t state; int32_t btype; uint32_t len; uint32_t cap; int64_t i; double d; uint8_t *buf; int32_t id;
} dbperf_param;
typedef struct { double nrows; double gen; double nfields; } dbperf_result;
]]

-- The hot path's entry points (see fast.rs), called through ffi as sysbench calls its own
-- C API, so LuaJIT compiles a script's loops with them inside. Kept local: nothing else
-- may call them.
local fast = raw.fast
raw.fast = nil
-- Pointers are passed as cdata: the JIT compiles no conversion from a lightuserdata.
local voidp = ffi.typeof("void *")
local CTX = ffi.cast(voidp, fast.ctx)
local f_rand = ffi.cast("uint32_t (*)(void *, int32_t, uint32_t, uint32_t)", fast.rand)
local f_rand_str = ffi.cast("int32_t (*)(void *, int32_t, const char *, size_t)", fast.rand_str)
local f_execute = ffi.cast("int32_t (*)(void *, void *)", fast.execute)
local f_query = ffi.cast("int32_t (*)(void *, void *, const char *, size_t)", fast.query)
local param_ptr = ffi.typeof("dbperf_param *")
local result_ptr = ffi.typeof("const dbperf_result *")

sysbench.error = { NONE = 0, RESTART_EVENT = 1 }
sysbench.hooks = sysbench.hooks or {}

-- ---------------------------------------------------------------------------------------
-- Command line

local cmdline = sysbench.cmdline
cmdline.ARG_NULL, cmdline.ARG_BOOL, cmdline.ARG_INT, cmdline.ARG_SIZE = 0, 1, 2, 3
cmdline.ARG_DOUBLE, cmdline.ARG_STRING, cmdline.ARG_LIST, cmdline.ARG_FILE = 4, 5, 6, 7
cmdline.ARG_MAX = 8
cmdline.PARALLEL_COMMAND = true

function cmdline.command_defined(name)
   local c = cmdline.commands
   return type(c) == "table" and type(c[name]) == "table" and c[name][1] ~= nil
end

function cmdline.command_parallel(name)
   return cmdline.command_defined(name) and cmdline.commands[name][2] == cmdline.PARALLEL_COMMAND
end

function cmdline.call_command(name)
   if not cmdline.command_defined(name) then
      return false
   end
   local rc = cmdline.commands[name][1]()
   if rc == nil then
      return true
   end
   return rc and true or false
end

-- ---------------------------------------------------------------------------------------
-- Random numbers (drawn in Rust from this thread's generator)

sysbench.rand = raw.rand

local function rand_fn(which, name)
   local why = raw.rand_errors[which]
   if why then
      return function()
         error("sysbench.rand." .. name .. ": " .. why, 2)
      end
   end
   return function(a, b)
      if not (type(a) == "number" and type(b) == "number" and a >= 0 and b >= a and b <= 4294967295) then
         error(string.format("sysbench.rand.%s(%s, %s): need 0 <= a <= b <= 4294967295", name,
                             tostring(a), tostring(b)), 2)
      end
      return f_rand(CTX, which, a, b)
   end
end
sysbench.rand.uniform = rand_fn(0, "uniform")
sysbench.rand.default = rand_fn(1, "default")
sysbench.rand.gaussian = rand_fn(2, "gaussian")
sysbench.rand.special = rand_fn(3, "special")
sysbench.rand.pareto = rand_fn(4, "pareto")
sysbench.rand.zipfian = rand_fn(5, "zipfian")

-- ---------------------------------------------------------------------------------------
-- SQL

local sql = {}
sysbench.sql = sql

sql.type = {
   NONE = 0, TINYINT = 1, SMALLINT = 2, INT = 3, BIGINT = 4, FLOAT = 5, DOUBLE = 6,
   TIME = 7, DATE = 8, DATETIME = 9, TIMESTAMP = 10, CHAR = 11, VARCHAR = 12,
}
sql.error = { NONE = 0, IGNORABLE = 1, FATAL = 2 }

local driver_methods, connection_methods, statement_methods = {}, {}, {}
local driver_mt = { __index = driver_methods, __tostring = function() return "<sql_driver>" end }
local connection_mt = { __index = connection_methods, __tostring = function() return "<sql_connection>" end }
local statement_mt = { __index = statement_methods, __tostring = function() return "<sql_statement>" end }

-- A statement's result: nrows, nfields and fetch_row(), good until the connection's next
-- statement. As in sysbench, a connection has one result, which each statement overwrites.
local result_methods = {}
local result_mt = { __index = result_methods, __tostring = function() return "<sql_result>" end }

function result_methods.fetch_row(self)
   local row = self._c:fetch_row(self._gen, self._row)
   if row ~= nil then
      self._row = self._row + 1
   end
   return row
end

function result_methods.free(self)
   self._gen = -1
   return true
end

function sql.driver(name)
   local drv = raw.driver(name)
   return setmetatable({ _name = drv }, driver_mt)
end

function driver_methods.name(self)
   return self._name
end

-- On a blocking-I/O thread every primitive completes inside the call (`*_now`, and ffi for
-- statements), so events run as plain calls; on an event-loop thread they yield to it.
local NOW = raw.blocking and "_now" or ""
local CONNECT = raw.blocking and raw.connect_now or raw.connect
local PREPARE, RECONNECT = "prepare" .. NOW, "reconnect" .. NOW
local BULK_NEXT, BULK_DONE = "bulk_insert_next" .. NOW, "bulk_insert_done" .. NOW

function driver_methods.connect(self)
   local c = CONNECT()
   local p, res = c:ptrs()
   local con = setmetatable({ _raw = c, _p = ffi.cast(voidp, p), _res = ffi.cast(result_ptr, res), driver = self }, connection_mt)
   con._rs = setmetatable({ nrows = 0, nfields = 0, _c = c, _gen = -1, _row = 0 }, result_mt)
   return con
end

-- Raises the error of a failed statement the way sysbench does. `ignorable` is the driver's
-- verdict (--mysql-ignore-errors, --pgsql-ignore-errors, a lost connection); the script's
-- sql_error_ignorable hook may downgrade any other error.
local function raise(con, query, errno, state, msg, ignorable, class)
   local errdesc = {
      connection = con,
      query = query,
      sql_errno = errno,
      sql_state = state,
      sql_errmsg = msg,
      dbperf_class = class,
   }
   local hook = sysbench.hooks.sql_error_ignorable
   if ignorable or (type(hook) == "function" and hook(errdesc)) then
      errdesc.errcode = sysbench.error.RESTART_EVENT
      error(errdesc, 3)
   end
   error(string.format("SQL error, errno = %d, state = '%s': %s", errno, state, msg), 3)
end

-- The connection's result after a statement (counts from the primitive's answer).
local function result(con, nrows, nfields, gen)
   local rs = con._rs
   rs.nrows, rs.nfields, rs._gen, rs._row = nrows, nfields, gen, 0
   return rs
end

-- The same after a statement sent through ffi (counts from the connection's dbperf_result).
local function fast_result(con)
   local rs, r = con._rs, con._res
   rs.nrows, rs.nfields, rs._gen, rs._row = r.nrows, r.nfields, r.gen, 0
   return rs
end

local query
if raw.blocking then
   query = function(self, q)
      if type(q) ~= "string" then
         error("con:query(): the query must be a string, not " .. type(q), 3)
      end
      local rc = f_query(CTX, self._p, q, #q)
      if rc == 0 then
         return fast_result(self)
      elseif rc == 1 then
         return raise(self, q, self._raw:last_error())
      end
      error(raw.fast_error(), 3)
   end
else
   query = function(self, q)
      local nrows, a, b, msg, ignorable, class = self._raw:query(q)
      if nrows == false then
         return raise(self, q, a, b, msg, ignorable, class)
      end
      return result(self, nrows, a, b)
   end
end

function connection_methods.query(self, q)
   return query(self, q)
end

function connection_methods.query_row(self, q)
   local rs = query(self, q)
   if rs.nrows == 0 or rs.nfields == 0 then
      return nil
   end
   return unpack(self._raw:fetch_row(rs._gen, 0), 1, rs.nfields)
end

function connection_methods.prepare(self, q)
   local c = self._raw
   local st, errno, state, msg, ignorable, class = c[PREPARE](c, q)
   if st == false then
      return raise(self, q, errno, state, msg, ignorable, class)
   end
   return setmetatable({ _raw = st, _p = ffi.cast(voidp, st:ptr()), connection = self }, statement_mt)
end

function connection_methods.bulk_insert_init(self, query)
   return self._raw:bulk_insert_init(query)
end

function connection_methods.bulk_insert_next(self, values)
   local c = self._raw
   local ok, errno, state, msg, ignorable, class = c[BULK_NEXT](c, values)
   if ok == false then
      return raise(self, "<bulk insert>", errno, state, msg, ignorable, class)
   end
   return true
end

function connection_methods.bulk_insert_done(self)
   local c = self._raw
   local ok, errno, state, msg, ignorable, class = c[BULK_DONE](c)
   if ok == false then
      return raise(self, "<bulk insert>", errno, state, msg, ignorable, class)
   end
   return true
end

function connection_methods.disconnect(self)
   return self._raw:disconnect()
end

function connection_methods.reconnect(self)
   local c = self._raw
   local ok, msg = c[RECONNECT](c)
   if not ok then
      error(msg, 2)
   end
   return true
end

function connection_methods.check_error(self, rs, query)
   return rs
end

-- Bound parameters: dbperf_param structs the script writes through ffi (as sysbench's own
-- are), read by the statements they are bound to when those run.
local param_methods = {}
local NULL, INT, DOUBLE, BYTES = 0, 1, 2, 3
local floor, huge = math.floor, math.huge

local function number_text(v)
   if v == floor(v) and v > -1e15 and v < 1e15 then
      return string.format("%d", v)
   end
   return tostring(v)
end

-- A value bound to a numeric parameter: a number, or a string that reads as one (a whole
-- number where `integer`).
local function numeric(v, t, integer)
   if t == "number" then
      return v
   elseif t == "string" then
      local n = tonumber(v)
      if n ~= nil and (not integer or (n == floor(n) and n ~= huge and n ~= -huge)) then
         return n
      end
      error("param:set(): " .. string.format("%q", v) .. (integer and " is not an integer" or " is not a number"), 3)
   end
   error("param:set(): cannot bind a " .. t, 3)
end

function param_methods.set(p, v)
   if v == nil then
      p.state = NULL
      return
   end
   local t, bt = type(v), p.btype
   if t == "boolean" then
      p.i = v and 1 or 0
      p.state = INT
   elseif bt == INT then
      p.i = numeric(v, t, true)
      p.state = INT
   elseif bt == DOUBLE then
      p.d = numeric(v, t, false)
      p.state = DOUBLE
   else
      if t == "number" then
         v = number_text(v)
      elseif t ~= "string" then
         error("param:set(): cannot bind a " .. t, 2)
      end
      local n = #v
      if n > p.cap then
         n = p.cap
      end
      ffi.copy(p.buf, v, n)
      p.len = n
      p.state = BYTES
   end
end

function param_methods.set_rand_str(p, fmt)
   if p.btype ~= BYTES then
      error("param:set_rand_str() needs a CHAR or VARCHAR parameter", 2)
   end
   if type(fmt) ~= "string" then
      error("param:set_rand_str(): the template must be a string", 2)
   end
   if f_rand_str(CTX, p.id, fmt, #fmt) ~= 0 then
      error(raw.fast_error(), 2)
   end
end

ffi.metatype("dbperf_param", {
   __index = param_methods,
   __tostring = function() return "<sql_param>" end,
})

function statement_methods.bind_create(self, btype, max_len)
   return ffi.cast(param_ptr, raw.param_new(btype, max_len))
end

function statement_methods.bind_param(self, ...)
   local n = select("#", ...)
   local ids = {}
   for i = 1, n do
      local p = select(i, ...)
      if not ffi.istype(param_ptr, p) then
         error("stmt:bind_param(): argument " .. i .. " is not a parameter made by stmt:bind_create()", 2)
      end
      ids[i] = p.id
   end
   return self._raw:bind_param(unpack(ids, 1, n))
end

if raw.blocking then
   function statement_methods.execute(self)
      local rc = f_execute(CTX, self._p)
      local con = self.connection
      if rc == 0 then
         return fast_result(con)
      elseif rc == 1 then
         return raise(con, "<prepared statement>", con._raw:last_error())
      end
      error(raw.fast_error(), 2)
   end
else
   function statement_methods.execute(self)
      local nrows, a, b, msg, ignorable, class = self._raw:execute()
      if nrows == false then
         return raise(self.connection, "<prepared statement>", a, b, msg, ignorable, class)
      end
      return result(self.connection, nrows, a, b)
   end
end

function statement_methods.close(self)
   return self._raw:close()
end

-- ---------------------------------------------------------------------------------------
-- Reports: the formatters sysbench offers to report hooks (stat fields as sysbench names them),
-- printing what sysbench's print, byte for byte. dbperf calls report_intermediate in a state of
-- its own (sysbench's reporting thread) and report_cumulative in the main state, so
-- report_json's array closes when its state does, as under sysbench.

-- The script's output and dbperf's own share the terminal line by line, in the order they
-- happen: the C library's stdout, which print() and io.write() use, is flushed at each newline.
io.stdout:setvbuf("line")

function sysbench.report_default(stat)
   local s = stat.time_interval
   print(string.format("[ %.0fs ] thds: %u tps: %4.2f qps: %4.2f (r/w/o: %4.2f/%4.2f/%4.2f) " ..
                       "lat (ms,%u%%): %4.2f err/s %4.2f reconn/s: %4.2f",
                       stat.time_total, stat.threads_running, stat.events / s,
                       (stat.reads + stat.writes + stat.other) / s,
                       stat.reads / s, stat.writes / s, stat.other / s,
                       sysbench.opt.percentile, stat.latency_pct * 1000,
                       stat.errors / s, stat.reconnects / s))
end

function sysbench.report_csv(stat)
   local s = stat.time_interval
   print(string.format("%.0f,%u,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f",
                       stat.time_total, stat.threads_running, stat.events / s,
                       (stat.reads + stat.writes + stat.other) / s,
                       stat.reads / s, stat.writes / s, stat.other / s,
                       stat.latency_pct * 1000, stat.errors / s, stat.reconnects / s))
end

-- A JSON array per state: "[" before its first report, "," between reports, "]" when the
-- state closes (a finalizer on a value only this function keeps).
local json_open = nil

function sysbench.report_json(stat)
   if json_open == nil then
      io.write("[\n")
      json_open = newproxy(true)
      getmetatable(json_open).__gc = function() io.write("\n]\n") end
   else
      io.write(",\n")
   end
   local s = stat.time_interval
   io.write(string.format('  {\n    "time": %4.0f,\n    "threads": %u,\n    "tps": %4.2f,\n' ..
                          '    "qps": {\n      "total": %4.2f,\n      "reads": %4.2f,\n' ..
                          '      "writes": %4.2f,\n      "other": %4.2f\n    },\n' ..
                          '    "latency": %4.2f,\n    "errors": %4.2f,\n    "reconnects": %4.2f\n  }',
                          stat.time_total, stat.threads_running, stat.events / s,
                          (stat.reads + stat.writes + stat.other) / s,
                          stat.reads / s, stat.writes / s, stat.other / s,
                          stat.latency_pct * 1000, stat.errors / s, stat.reconnects / s))
   -- The object's last line has no newline yet: out now, before dbperf's next line.
   io.stdout:flush()
end

-- The script's options as `dbperf lua SCRIPT help` lists them (dbperf sets raw.test_options
-- before it calls the script's help()).
function cmdline.print_test_options()
   io.write(raw.test_options or "")
end

-- The event loop's restart rule: run event() again after an ignorable error, calling the
-- script's before_restart_event hook first. dbperf's engine does the looping and counting;
-- this only tells a restart from a failure.
function raw.is_restart(err)
   return type(err) == "table" and err.errcode == sysbench.error.RESTART_EVENT
end

-- ---------------------------------------------------------------------------------------
-- What dbperf does not offer fails by name, with what to use instead.

local function unsupported(what, instead)
   error(what .. " is not supported by dbperf" .. (instead and ("; " .. instead) or ""), 3)
end

local function strict(t, prefix, instead)
   return setmetatable(t, { __index = function(_, k)
      unsupported(prefix .. tostring(k), instead)
   end })
end

strict(sysbench.rand, "sysbench.rand.", "dbperf has uniform, default, gaussian, special, pareto, " ..
       "zipfian, uniform_uint64, uniform_double, unique, string and varstring")
strict(sql, "sysbench.sql.", "use sysbench.sql.driver(), type and error")
strict(connection_methods, "con:", "connections have query, query_row, prepare, bulk_insert_init/next/done, " ..
       "disconnect and reconnect")
strict(statement_methods, "stmt:", "statements have bind_create, bind_param, execute and close")
strict(param_methods, "param:", "parameters have set and set_rand_str")
sysbench.db = strict({}, "sysbench.db.", "the sysbench 0.5 db_* API is gone in sysbench 1.0 too: use " ..
                     "sysbench.sql.driver():connect() and con:query()")
sysbench.histogram = strict({}, "sysbench.histogram.", "dbperf keeps HDR histograms of every " ..
                            "transaction and statement itself")

-- sysbench 1.0's compatibility names for sysbench 0.5 scripts.
thread_id = sysbench.tid
test = sysbench.cmdline.script_path
function sb_rnd()
   return raw.rand_u32()
end
sb_rand = sysbench.rand.default
sb_rand_str = sysbench.rand.string
sb_rand_uniform = sysbench.rand.uniform
sb_rand_gaussian = sysbench.rand.gaussian
sb_rand_special = sysbench.rand.special
function sb_rand_uniq(a, b)
   a = a or 0
   b = b or 4294967295
   local v
   repeat
      v = sysbench.rand.unique()
   until v >= a and v <= b
   return v
end
for _, name in ipairs({ "db_connect", "db_disconnect", "db_query", "db_bulk_insert_init",
                        "db_bulk_insert_next", "db_bulk_insert_done", "db_prepare", "db_bind_param",
                        "db_bind_result", "db_execute", "db_store_results", "db_free_results",
                        "db_close" }) do
   _G[name] = function()
      unsupported(name .. "()", "this is the sysbench 0.5 API; sysbench 1.0 scripts use " ..
                  "sysbench.sql.driver():connect() and con:query()")
   end
end

-- One event, as sysbench's thread loop runs it; one number back (cheap to read on every
-- event): 0 when it ran through, 1 when it ran through and returned something (its thread is
-- done), 2 after an ignorable SQL error (the event runs again; its errdesc in
-- raw.failure), 3 after any other error (its message, with the script's traceback, in
-- raw.failure).
local traceback = debug.traceback
local function on_error(err)
   if raw.is_restart(err) then
      return err
   end
   return traceback(tostring(err), 2)
end

function raw.run_event(tid)
   local ok, res = xpcall(event, on_error, tid)
   if ok then
      -- sysbench: an event that returns anything but nil or false ends its thread.
      return (res == nil or res == false) and 0 or 1
   end
   raw.failure = res
   return type(res) == "table" and 2 or 3
end

sysbench.__dbperf = raw
