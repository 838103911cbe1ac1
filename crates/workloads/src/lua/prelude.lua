-- dbperf's sysbench 1.0 API, the Lua half: the tables a sysbench script sees (sysbench.sql,
-- sysbench.error, sysbench.hooks, sysbench.cmdline helpers, sysbench.histogram, the report
-- formatters, and sysbench.db with the db_*/sb_* globals of the sysbench 0.5 API) built on the
-- primitives dbperf passes in as `raw` (connections, statements and random numbers, in Rust),
-- and sysbench's log (`FATAL: ...`, `ALERT: ...`) for what its drivers say.
-- Errors are raised as sysbench raises them: an ignorable SQL error as a table whose errcode is
-- sysbench.error.RESTART_EVENT (the event runs again), anything else as sysbench's message.

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
-- On an event-loop thread a primitive does not wait for the server: it leaves its work with
-- dbperf and the coroutine yields (no values) until dbperf resumes it with the work's status
-- (see suspend.rs). `SUSPENDED` is what the ffi entry points then return.
local yield = coroutine.yield
local SUSPENDED = 3
local take_answer = raw.take_answer
raw.take_answer = nil
local param_ptr = ffi.typeof("dbperf_param *")
local result_ptr = ffi.typeof("const dbperf_result *")

sysbench.error = { NONE = 0, RESTART_EVENT = 1 }
sysbench.hooks = sysbench.hooks or {}

-- ---------------------------------------------------------------------------------------
-- sysbench's log: a message at a level (0 FATAL ... 5 DEBUG) is printed when --verbosity is at
-- least that level, with sysbench's prefix; a message equal to the one before it is counted,
-- not printed, and the count is said before the next one ("(last message repeated N times)").

local LOG_PREFIX = { [0] = "FATAL: ", "ALERT: ", "WARNING: ", "", "", "DEBUG: " }
local last_logged, repeated = nil, 0

local function log(level, text)
   local verbosity = tonumber(sysbench.opt and sysbench.opt.verbosity) or 3
   if level > verbosity then
      return
   end
   if text == last_logged then
      repeated = repeated + 1
      return
   end
   if repeated > 0 then
      print(string.format("(last message repeated %u times)", repeated))
   end
   last_logged, repeated = text, 0
   print(LOG_PREFIX[level] .. text)
end
raw.log = log

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
sysbench.histogram = {}

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

-- sysbench's rule: a result can be freed while it is its connection's current result set (a
-- statement that returned rows); anything else is an invalid result set.
function result_methods.free(self)
   local con = type(self) == "table" and self._con
   if not con then
      log(1, "attempt to free an invalid result set")
      error("db_free_results() failed", 2)
   end
   if con._closed then
      log(1, "attempt to use an already closed connection")
      error("db_free_results() failed", 2)
   end
   if not self._set then
      log(1, "attempt to free an invalid result set")
      error("db_free_results() failed", 2)
   end
   self._set = false
   self._gen = -1
   return true
end

function sql.driver(name)
   -- No name: --db-driver's, which sysbench checks as it makes the driver.
   local want = name
   if want == nil or want == "" then
      want = sysbench.opt and sysbench.opt["db-driver"]
   end
   if want ~= nil and want ~= "" and want ~= "mysql" and want ~= "pgsql" then
      log(0, string.format("invalid database driver name: '%s'", tostring(want)))
      error("failed to initialize the DB driver", 2)
   end
   local drv, why = raw.driver(name)
   if drv == nil then
      error(why, 2)
   end
   return setmetatable({ _name = drv }, driver_mt)
end

function driver_methods.name(self)
   return self._name
end

-- On a blocking-I/O thread every primitive completes inside the call (`*_now`, and ffi for
-- statements), so events run as plain calls. On an event-loop thread the `*_start` primitive
-- leaves its work pending, the coroutine yields, and its answer is taken once resumed.
local function primitive(name)
   local now, start = name .. "_now", name .. "_start"
   return function(obj, ...)
      -- Looked up at each call: a script's top level runs blocking on every thread.
      if raw.blocking then
         return obj[now](obj, ...)
      end
      obj[start](obj, ...)
      yield()
      return take_answer()
   end
end
local PREPARE, RECONNECT = primitive("prepare"), primitive("reconnect")
local BULK_NEXT, BULK_DONE = primitive("bulk_insert_next"), primitive("bulk_insert_done")
local CONNECT = primitive("connect")

-- Connections open when the script asks (as in sysbench): a failure is logged in the driver's
-- words and raised as sysbench raises it, so the script can catch it.
function driver_methods.connect(self)
   local c, why = CONNECT(raw)
   if c == nil then
      for _, line in ipairs(why) do
         log(0, line)
      end
      error("connection creation failed", 2)
   end
   local p, res = c:ptrs()
   local con = setmetatable({ _raw = c, _p = ffi.cast(voidp, p), _res = ffi.cast(result_ptr, res), _closed = false,
                             driver = self }, connection_mt)
   con._rs = setmetatable({ nrows = 0, nfields = 0, _c = c, _con = con, _gen = -1, _row = 0, _set = false }, result_mt)
   return con
end

-- The driver's own log line for a failed statement that is not ignorable, as sysbench's mysql
-- and pgsql drivers write it. `stmt_sql`: the prepared statement's text (nil for a query).
local function log_failure(con, query, stmt_sql, errno, msg)
   if con.driver._name == "pgsql" then
      if stmt_sql then
         log(0, string.format("PQexecPrepared() failed: 7 %s", msg))
      else
         log(0, string.format("PQexec() failed: 7 %s", msg))
         log(0, "failed query was: " .. query)
      end
   elseif stmt_sql then
      log(0, string.format("mysql_stmt_execute() returned error %u (%s) for query '%s'", errno, msg, stmt_sql))
   else
      log(0, string.format("mysql_drv_query() returned error %u (%s) for query '%s'", errno, msg, query))
   end
end

-- What an error descriptor names as its `connection`: a cdata standing for the connection
-- (sysbench's is one, so a script printing the descriptor sees `<sql_connection>`), which
-- passes reads, writes and method calls on to it.
ffi.cdef[[typedef struct { int32_t id; } dbperf_connection;]]
local by_handle = setmetatable({}, { __mode = "v" })
local handle_count = 0
ffi.metatype("dbperf_connection", {
   __index = function(h, k) return by_handle[h.id][k] end,
   __newindex = function(h, k, v) by_handle[h.id][k] = v end,
   __tostring = function() return "<sql_connection>" end,
})

local function handle_of(con)
   if type(con) == "cdata" then
      return con
   end
   local h = rawget(con, "_handle")
   if h == nil then
      handle_count = handle_count + 1
      h = ffi.new("dbperf_connection", handle_count)
      by_handle[handle_count] = con
      rawset(con, "_handle", h)
   end
   return h
end

-- Raises the error of a failed statement the way sysbench does. `ignorable` is the driver's
-- verdict (--mysql-ignore-errors, --pgsql-ignore-errors, a lost connection); the script's
-- sql_error_ignorable hook may downgrade any other error. No SQL state: a misuse of the API
-- (a closed connection), raised as sysbench's "SQL API error". Called as a tail call by the
-- methods, so level 2 is the script's line.
local function raise(con, query, errno, state, msg, ignorable, class, stmt_sql)
   if state == nil then
      log(1, msg)
      error("SQL API error", 3)
   end
   if not ignorable then
      log_failure(con, query, stmt_sql, errno, msg)
   end
   local errdesc = {
      connection = handle_of(con),
      query = query,
      sql_errno = errno,
      sql_state = state,
      sql_errmsg = msg,
   }
   local hook = sysbench.hooks.sql_error_ignorable
   if ignorable or (type(hook) == "function" and hook(errdesc)) then
      errdesc.errcode = sysbench.error.RESTART_EVENT
      errdesc.dbperf_class = class
      error(errdesc, 2)
   end
   error(string.format("SQL error, errno = %d, state = '%s': %s", errno, state, msg), 2)
end

-- The connection's result after a statement (counts from the connection's dbperf_result).
local function fast_result(con)
   local rs, r = con._rs, con._res
   local nfields = r.nfields
   rs.nrows, rs.nfields, rs._gen, rs._row, rs._set = r.nrows, nfields, r.gen, 0, nfields > 0
   return rs
end

local function query(self, q)
   if type(q) ~= "string" then
      error("con:query(): the query must be a string, not " .. type(q), 3)
   end
   local rc = f_query(CTX, self._p, q, #q)
   if rc == SUSPENDED then
      rc = yield()
   end
   if rc == 0 then
      return fast_result(self)
   elseif rc == 1 then
      return raise(self, q, self._raw:last_error())
   end
   error(raw.fast_error(), 3)
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

-- A statement the server would not prepare is sysbench's "SQL API error" (never restarted),
-- after the driver's log lines.
function connection_methods.prepare(self, q)
   local c = self._raw
   local st, errno, state, msg = PREPARE(c, q)
   if st == false then
      if state == nil then
         log(1, msg)
      elseif self.driver._name == "pgsql" then
         log(0, "PQprepare() failed: " .. (c:libpq_error() or ("ERROR:  " .. msg .. "\n")))
      else
         log(0, "mysql_stmt_prepare() failed")
         log(0, string.format('MySQL error: %d "%s"', errno, msg))
      end
      error("SQL API error", 2)
   end
   return setmetatable({ _raw = st, _p = ffi.cast(voidp, st:ptr()), _sql = q, connection = self }, statement_mt)
end

function connection_methods.bulk_insert_init(self, query)
   if self._closed then
      log(1, "attempt to use an already closed connection")
      return true
   end
   return self._raw:bulk_insert_init(query)
end

-- sysbench fails a bulk insert whose statement fails by assertion, ignorable or not.
local function bulk_failed(self, what, ok, errno, state, msg, ignorable)
   if state == nil then
      log(1, msg)
   elseif not ignorable then
      log_failure(self, "<bulk insert>", nil, errno, msg)
   end
   error(what .. " failed", 2)
end

function connection_methods.bulk_insert_next(self, values)
   local c = self._raw
   local ok, errno, state, msg, ignorable = BULK_NEXT(c, values)
   if ok == nil then
      log(1, errno)
      error("db_bulk_insert_next() failed", 2)
   elseif ok == false then
      return bulk_failed(self, "db_bulk_insert_next()", ok, errno, state, msg, ignorable)
   end
   return true
end

function connection_methods.bulk_insert_done(self)
   local c = self._raw
   local ok, errno, state, msg, ignorable = BULK_DONE(c)
   if ok == false then
      return bulk_failed(self, "db_bulk_insert_done()", ok, errno, state, msg, ignorable)
   end
   return true
end

function connection_methods.disconnect(self)
   if not self._raw:disconnect() then
      log(1, "attempt to close an already closed connection")
   end
   self._closed = true
   return true
end

-- sysbench's pgsql driver cannot reconnect (it says so and goes on); its mysql driver reopens
-- the connection. A failure is sysbench's failed assertion, after the driver's words.
function connection_methods.reconnect(self)
   if self._closed then
      log(1, "attempt to close an already closed connection")
      return true
   end
   if self.driver._name == "pgsql" then
      log(1, "reconnect is not supported by the current driver")
      return true
   end
   local c = self._raw
   local ok, msg = RECONNECT(c)
   if not ok then
      log(0, msg)
      error("assertion failed!", 2)
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

-- sysbench's bind types: integers, FLOAT/DOUBLE, CHAR/VARCHAR.
local BINDABLE = { [1] = true, [2] = true, [3] = true, [4] = true, [5] = true, [6] = true, [11] = true, [12] = true }

function statement_methods.bind_create(self, btype, max_len)
   if not BINDABLE[btype] then
      error("Unsupported argument type: " .. tostring(btype), 2)
   end
   return ffi.cast(param_ptr, raw.param_new(btype, max_len))
end

-- No parameters: nil, as sysbench; else what binding returns (0).
function statement_methods.bind_param(self, ...)
   local n = select("#", ...)
   if n < 1 then
      return nil
   end
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

function statement_methods.execute(self)
   local rc = f_execute(CTX, self._p)
   if rc == SUSPENDED then
      rc = yield()
   end
   local con = self.connection
   if rc == 0 then
      return fast_result(con)
   elseif rc == 1 then
      local errno, state, msg, ignorable, class = con._raw:last_error()
      return raise(con, "<prepared statement>", errno, state, msg, ignorable, class, self._sql)
   end
   error(raw.fast_error(), 2)
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

-- ---------------------------------------------------------------------------------------
-- sysbench.histogram: a script's own bounded histogram. `size` buckets spaced evenly on a log
-- scale from range_min to range_max (a value outside lands in the first or last); print() draws
-- the buckets that hold values, each value at its bucket's centre, bars scaled to the largest.

local histogram_methods = {}
local histogram_mt = { __index = histogram_methods, __tostring = function() return "<sb_histogram>" end }
local log_, exp_ = math.log, math.exp

function sysbench.histogram.new(size, range_min, range_max)
   if not (type(size) == "number" and size >= 2 and type(range_min) == "number" and range_min > 0
           and type(range_max) == "number" and range_max > range_min) then
      error(string.format("sysbench.histogram.new(%s, %s, %s): need size >= 2 and 0 < range_min < range_max",
                          tostring(size), tostring(range_min), tostring(range_max)), 2)
   end
   size = floor(size)
   local offset = log_(range_min)
   local counts = {}
   for i = 0, size - 1 do
      counts[i] = 0
   end
   return setmetatable({ _size = size, _offset = offset, _scale = (size - 1) / (log_(range_max) - offset),
                         _counts = counts }, histogram_mt)
end

function histogram_methods.update(self, value)
   local i = floor((log_(value) - self._offset) * self._scale + 0.5)
   if i ~= i or i < 0 then
      i = 0
   elseif i >= self._size then
      i = self._size - 1
   end
   self._counts[i] = self._counts[i] + 1
end

function histogram_methods.print(self)
   local counts, most = self._counts, 0
   for i = 0, self._size - 1 do
      if counts[i] > most then
         most = counts[i]
      end
   end
   if most == 0 then
      return
   end
   local lines = { "       value  ------------- distribution ------------- count" }
   for i = 0, self._size - 1 do
      local n = counts[i]
      if n > 0 then
         local bar = string.rep("*", floor(n * 40 / most + 0.5))
         lines[#lines + 1] = string.format("%12.3f |%-40s %d", exp_(i / self._scale + self._offset), bar, n)
      end
   end
   print(table.concat(lines, "\n"))
end

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

-- ---------------------------------------------------------------------------------------
-- The sysbench 0.5 API, as sysbench 1.0 keeps it for old scripts (sysbench.db and its db_*
-- globals): one connection per thread, opened by db_connect() or by the first statement;
-- db_bind_param(stmt, values) binds a table whose values are read again at each db_execute()
-- (a number binds as an integer, a string as text); an ignorable error restarts the event,
-- another fails the call (db_execute only logs it, as sysbench does).

local db = {}
sysbench.db = db
db.DB_ERROR_NONE, db.DB_ERROR_RESTART_TRANSACTION, db.DB_ERROR_FAILED = 0, 1, 2
local legacy_con

local function restart_event(class, errno, msg)
   error({ errcode = sysbench.error.RESTART_EVENT, dbperf_class = class, sql_errno = errno, sql_errmsg = msg }, 0)
end

function db.connect()
   local drv = sql.driver()
   db_driver = drv:name()
   if legacy_con ~= nil then
      return
   end
   local ok, con = pcall(drv.connect, drv)
   if not ok then
      error("Failed to connect to the database", 2)
   end
   legacy_con = con
end

function db.disconnect()
   if legacy_con ~= nil then
      legacy_con._raw:disconnect()
      legacy_con = nil
   end
end

local function opened()
   if legacy_con == nil then
      db.connect()
   end
   return legacy_con
end

local function checked()
   if legacy_con == nil then
      error("Uninitialized database connection", 3)
   end
   return legacy_con
end

-- A statement's outcome: true, or its error after the driver's log line; an ignorable error
-- restarts the event.
local function legacy_outcome(con, sql_text, stmt_sql, nrows, errno, state, msg, ignorable, class)
   if nrows ~= false then
      return true
   end
   if state == nil then
      log(1, msg)
      return false
   end
   if ignorable then
      restart_event(class, errno, msg)
   end
   log_failure(con, sql_text, stmt_sql, errno, msg)
   return false
end

local function legacy_query(con, q)
   local rc = f_query(CTX, con._p, q, #q)
   if rc == SUSPENDED then
      rc = yield()
   end
   if rc == 0 then
      return true
   elseif rc == 1 then
      return legacy_outcome(con, q, nil, false, con._raw:last_error())
   end
   error(raw.fast_error(), 3)
end

function db.query(q)
   if type(q) ~= "string" then
      error("bad argument #1 to 'db_query' (string expected, got " .. type(q) .. ")", 2)
   end
   if not legacy_query(opened(), q) then
      error("db_query() failed", 2)
   end
end

function db.bulk_insert_init(q)
   opened():bulk_insert_init(q)
end

function db.bulk_insert_next(values)
   local con = checked()
   local c = con._raw
   local ok, errno, state, msg, ignorable, class = BULK_NEXT(c, values)
   if ok == nil then
      log(1, errno)
      error("db_bulk_insert_next() failed", 2)
   end
   if not legacy_outcome(con, "<bulk insert>", nil, ok, errno, state, msg, ignorable, class) then
      error("db_bulk_insert_next() failed", 2)
   end
end

function db.bulk_insert_done()
   local con = checked()
   local c = con._raw
   legacy_outcome(con, "<bulk insert>", nil, BULK_DONE(c))
end

local legacy_stmt_mt = { __tostring = function() return "<sysbench.stmt>" end }
local legacy_rs_mt = { __tostring = function() return "<sysbench.rs>" end }

function db.prepare(q)
   local con = opened()
   local ok, st = pcall(con.prepare, con, q)
   if not ok then
      error("db_prepare() failed", 2)
   end
   return setmetatable({ _st = st, _con = con }, legacy_stmt_mt)
end

local function is_stmt(stmt, fname)
   if getmetatable(stmt) ~= legacy_stmt_mt then
      error("bad argument #1 to '" .. fname .. "' (sysbench.stmt expected, got " .. type(stmt) .. ")", 3)
   end
end

-- The table's keys in order (an array's 1..n, as sysbench walks it).
local function keys_of(t)
   local keys = {}
   for k in pairs(t) do
      keys[#keys + 1] = k
   end
   table.sort(keys, function(a, b)
      if type(a) == type(b) and (type(a) == "number" or type(a) == "string") then
         return a < b
      end
      return type(a) < type(b)
   end)
   return keys
end

-- A text parameter's room: grown (a new parameter, bound again) when a value is longer.
local function text_param(st, len)
   local cap = 64
   while cap < len do
      cap = cap * 2
   end
   return st:bind_create(sql.type.VARCHAR, cap), cap
end

local function rebind(stmt)
   local ps = {}
   for i, b in ipairs(stmt._binds) do
      ps[i] = b.param
   end
   stmt._st:bind_param(unpack(ps, 1, #ps))
end

function db.bind_param(stmt, values)
   checked()
   is_stmt(stmt, "db_bind_param")
   if type(values) ~= "table" then
      error("table was expected", 2)
   end
   local keys = keys_of(values)
   if #keys == 0 then
      error("table is empty", 2)
   end
   local binds = {}
   for i, k in ipairs(keys) do
      local v = values[k]
      if type(v) == "number" then
         binds[i] = { key = k, text = false, param = stmt._st:bind_create(sql.type.BIGINT) }
      elseif type(v) == "string" then
         local p, cap = text_param(stmt._st, #v)
         binds[i] = { key = k, text = true, param = p, cap = cap }
      else
         error("Unsupported variable type: " .. type(v), 2)
      end
   end
   stmt._binds, stmt._values = binds, values
   rebind(stmt)
end

function db.bind_result(stmt, values)
   checked()
   is_stmt(stmt, "db_bind_result")
   if type(values) ~= "table" then
      error("table was expected", 2)
   end
   if next(values) == nil then
      error("table is empty", 2)
   end
   stmt._results = values
end

function db.execute(stmt)
   local con = checked()
   is_stmt(stmt, "db_execute")
   local binds, values = stmt._binds, stmt._values
   if binds then
      local grown = false
      for _, b in ipairs(binds) do
         local v = values[b.key]
         if v ~= nil and b.text then
            v = tostring(v)
            if #v > b.cap then
               b.param, b.cap = text_param(stmt._st, #v)
               grown = true
            end
         end
         b.param:set(v)
      end
      if grown then
         rebind(stmt)
      end
   end
   local st = stmt._st
   local ok
   local rc = f_execute(CTX, st._p)
   if rc == SUSPENDED then
      rc = yield()
   end
   if rc == 0 then
      ok = true
   elseif rc == 1 then
      ok = legacy_outcome(con, "<prepared statement>", st._sql, false, con._raw:last_error())
   else
      error(raw.fast_error(), 2)
   end
   return setmetatable({ _ok = ok }, legacy_rs_mt)
end

function db.store_results(rs)
   checked()
end

function db.free_results(rs)
   checked()
end

function db.close(stmt)
   checked()
   is_stmt(stmt, "db_close")
   stmt._st:close()
end

db_connect, db_disconnect, db_query = db.connect, db.disconnect, db.query
db_bulk_insert_init, db_bulk_insert_next, db_bulk_insert_done = db.bulk_insert_init, db.bulk_insert_next,
                                                                 db.bulk_insert_done
db_prepare, db_bind_param, db_bind_result, db_execute = db.prepare, db.bind_param, db.bind_result, db.execute
db_store_results, db_free_results, db_close = db.store_results, db.free_results, db.close
DB_ERROR_NONE, DB_ERROR_RESTART_TRANSACTION, DB_ERROR_FAILED = db.DB_ERROR_NONE, db.DB_ERROR_RESTART_TRANSACTION,
                                                               db.DB_ERROR_FAILED
mysql_table_engine = mysql_table_engine or "innodb"
myisam_max_rows = 1000000

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

-- A script's own thread_run(thread_id) replaces sysbench's loop of event() calls: it runs
-- once, as the thread's one event, and ends the thread.
local function run_thread(tid)
   local ok, res = xpcall(thread_run, on_error, tid)
   if ok then
      return 1
   end
   raw.failure = res
   return type(res) == "table" and 2 or 3
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

-- The event loop of a connection on an event-loop thread: one coroutine for the run, which
-- yields each event's code (a yield with no values waits for the server; see suspend.rs).
function raw.event_loop(tid)
   local run = raw.runner()
   while true do
      yield(run(tid))
   end
end

-- What runs a thread's events, chosen once per thread: the script's thread_run, or run_event.
function raw.runner()
   return type(rawget(_G, "thread_run")) == "function" and run_thread or raw.run_event
end

sysbench.__dbperf = raw
