// Runs first in every fresh context, before any module code. It strips the global object down
// to the ECMAScript intrinsics, pins the clock, removes randomness, routes console into the
// host's bounded log, and returns helpers that hold their own references to the intrinsics
// (module code may later replace globals; these helpers must not notice).
(function (sink, allowed) {
  "use strict";
  const g = globalThis;
  const ObjectRef = Object;
  const freeze = Object.freeze;
  const getPrototypeOf = Object.getPrototypeOf;
  const keys = Object.keys;
  const isArray = Array.isArray;
  const ObjectProto = Object.prototype;
  const stringify = JSON.stringify;
  const isFinite = Number.isFinite;
  const StringRef = String;

  for (const name of Reflect.ownKeys(g)) {
    if (typeof name === "string" && !allowed.includes(name)) {
      delete g[name];
    }
  }

  const RealDate = g.Date;
  function FixedDate(...args) {
    if (new.target === undefined) {
      return new RealDate(0).toString();
    }
    return Reflect.construct(RealDate, args.length === 0 ? [0] : args, new.target);
  }
  FixedDate.prototype = RealDate.prototype;
  ObjectRef.defineProperty(RealDate.prototype, "constructor", {
    value: FixedDate, writable: true, configurable: true, enumerable: false,
  });
  ObjectRef.defineProperty(FixedDate, "length", { value: 7 });
  ObjectRef.defineProperty(FixedDate, "name", { value: "Date" });
  FixedDate.now = function now() { return 0; };
  FixedDate.parse = RealDate.parse;
  FixedDate.UTC = RealDate.UTC;
  ObjectRef.defineProperty(g, "Date", {
    value: FixedDate, writable: true, configurable: true, enumerable: false,
  });

  ObjectRef.defineProperty(Math, "random", {
    value: function random() {
      throw new TypeError(
        "Math.random() is unavailable in deterministic modules: derive values from the inputs instead"
      );
    },
    writable: true, configurable: true, enumerable: false,
  });

  const format = (v) => {
    try {
      if (typeof v === "string") return v;
      const s = stringify(v);
      return s === undefined ? StringRef(v) : s;
    } catch (_) {
      try { return StringRef(v); } catch (_) { return "[unprintable]"; }
    }
  };
  const writer = (level) => function (...args) {
    let text = "";
    for (let i = 0; i < args.length; i++) {
      text += (i === 0 ? "" : " ") + format(args[i]);
    }
    sink(level, text);
  };
  const console = {
    log: writer("log"), info: writer("info"), warn: writer("warn"),
    error: writer("error"), debug: writer("debug"),
  };
  ObjectRef.defineProperty(g, "console", {
    value: console, writable: true, configurable: true, enumerable: false,
  });

  // Returns null when `value` is JSON-compatible, else a message naming the first offending path.
  function checkOutput(value) {
    const seen = [];
    function walk(v, path) {
      switch (typeof v) {
        case "string": case "boolean": return null;
        case "number": return isFinite(v) ? null : `${path} is ${v}, which JSON cannot represent`;
        case "undefined": return `${path} is undefined`;
        case "function": return `${path} is a function`;
        case "symbol": return `${path} is a symbol`;
        case "bigint": return `${path} is a BigInt; convert it to a string or number`;
      }
      if (v === null) return null;
      for (let i = 0; i < seen.length; i++) {
        if (seen[i] === v) return `${path} is a cycle back to an enclosing object`;
      }
      seen[seen.length] = v;
      let err = null;
      if (isArray(v)) {
        for (let i = 0; i < v.length && err === null; i++) err = walk(v[i], `${path}[${i}]`);
      } else {
        const proto = getPrototypeOf(v);
        if (proto !== ObjectProto && proto !== null) {
          const name = (proto && proto.constructor && proto.constructor.name) || "object";
          return `${path} is a ${name}, not a plain object or array`;
        }
        const ks = keys(v);
        for (let i = 0; i < ks.length && err === null; i++) err = walk(v[ks[i]], `${path}.${ks[i]}`);
      }
      seen.length = seen.length - 1;
      return err;
    }
    return walk(value, "output");
  }

  function context(environment) {
    return freeze({ environment: freeze(environment) });
  }

  return { checkOutput, context, stringify };
})
