// Runs first in every fresh context, before any module code. It strips the global object down
// to the ECMAScript intrinsics, pins the clock, removes randomness, routes console into the
// host's bounded log, and returns helpers for the engine.
//
// The rule for everything below: module code runs later and may replace any global, any
// prototype method, even `Reflect` or `Function.prototype.call`. So every function this prelude
// leaves behind calls only the intrinsics captured in the block right below, through `apply` and
// `construct`, and reads no global or prototype property when it runs. Internal tables have a
// null prototype, so an inherited setter (`Array.prototype[0]`) cannot intercept them. Every
// function here is strict, so stack-trace APIs and `caller` never hand one to module code.
(function (sink, allowed, chargeBuffers, math, url) {
  "use strict";
  const g = globalThis;
  const apply = Reflect.apply;
  const construct = Reflect.construct;
  const ownKeys = Reflect.ownKeys;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const create = Object.create;
  const isArray = Array.isArray;
  const includes = Array.prototype.includes;
  const stringify = JSON.stringify;
  const StringRef = String;
  const isWellFormed = String.prototype.isWellFormed;
  const toWellFormed = String.prototype.toWellFormed;
  const charCodeAt = String.prototype.charCodeAt;
  const slice = String.prototype.slice;
  const indexOf = String.prototype.indexOf;
  const MapRef = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const numberValueOf = Number.prototype.valueOf;
  const stringValueOf = String.prototype.valueOf;
  const booleanValueOf = Boolean.prototype.valueOf;
  const RealDate = g.Date;
  const DateProto = RealDate.prototype;
  const dateToString = DateProto.toString;
  const dateGetTime = DateProto.getTime;
  const dateToTimeString = DateProto.toTimeString;
  const dateToDateString = DateProto.toDateString;
  const numberToString = Number.prototype.toString;
  const bigintToString = BigInt.prototype.toString;
  const bigintValueOf = BigInt.prototype.valueOf;
  const BigIntRef = BigInt;
  const normalize = String.prototype.normalize;
  const regexpExec = RegExp.prototype.exec;
  const trunc = Math.trunc;
  const floor = Math.floor;
  const DataViewRef = DataView;
  const getUint32 = DataView.prototype.getUint32;
  const setUint32 = DataView.prototype.setUint32;
  const getFloat64 = DataView.prototype.getFloat64;
  const setFloat64 = DataView.prototype.setFloat64;
  const setPrototypeOf = Object.setPrototypeOf;
  const toPrimitiveKey = Symbol.toPrimitive;
  const ErrorRef = Error;
  const TypeErrorRef = TypeError;
  const RangeErrorRef = RangeError;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const BufferRef = g.ArrayBuffer;
  const BufferProto = BufferRef.prototype;
  const bufferResize = BufferProto.resize;
  const bufferTransfer = BufferProto.transfer;
  const bufferResizable = getOwnPropertyDescriptor(BufferProto, "resizable").get;
  const bufferLength = getOwnPropertyDescriptor(BufferProto, "byteLength").get;
  const bufferMaxLength = getOwnPropertyDescriptor(BufferProto, "maxByteLength").get;
  const MAX_BUFFER = 2147483647;
  const functionToString = Function.prototype.toString;
  const WeakMapRef = WeakMap;
  const weakGet = WeakMap.prototype.get;
  const weakSet = WeakMap.prototype.set;
  const HEX = "0123456789ABCDEF";

  for (const name of ownKeys(g)) {
    if (typeof name === "string" && !apply(includes, allowed, [name])) {
      delete g[name];
    }
  }

  // ArrayBuffer: the same constructor on both engines, under which every byte a buffer holds
  // counts against the call's memory. QuickJS counts a resizable buffer's contents in its one
  // memory limit. V8 keeps them outside the allocator that bounds ArrayBuffer contents (module
  // `buffers` of the V8 engine), so there (`chargeBuffers`) the most a resizable buffer has
  // held is taken from that allocator's budget as fixed buffers kept beside it, for as long as
  // the buffer lives: past the budget, creating or growing it throws V8's own RangeError and
  // the call fails with `heap_bytes`, as on QuickJS.
  const charged = new WeakMapRef();
  function charge(buffer) {
    if (!chargeBuffers || !apply(bufferResizable, buffer, [])) return;
    const length = apply(bufferLength, buffer, []);
    let held = apply(weakGet, charged, [buffer]);
    if (held === undefined) {
      held = create(null);
      held.bytes = 0;
      held.parts = 0;
      apply(weakSet, charged, [buffer, held]);
    }
    if (length > held.bytes) {
      held[held.parts] = construct(BufferRef, [length - held.bytes]);
      held.parts += 1;
      held.bytes = length;
    }
  }
  function ArrayBuffer(length) {
    if (new.target === undefined) {
      throw new TypeErrorRef("Constructor ArrayBuffer requires 'new'");
    }
    // One answer for a length either engine cannot hold (V8 took up to 2^53 of address space
    // to reserve, QuickJS refused past 2^31 - 1): a RangeError on both. Only a number is
    // checked here, so that a `valueOf` still runs once, in the engine.
    if (typeof length === "number" && length > MAX_BUFFER) {
      throw new RangeErrorRef("Array buffer allocation failed");
    }
    const buffer = construct(BufferRef, arguments, new.target);
    if (apply(bufferResizable, buffer, []) && apply(bufferMaxLength, buffer, []) > MAX_BUFFER) {
      throw new RangeErrorRef("Invalid array buffer max length");
    }
    charge(buffer);
    return buffer;
  }
  const bufferMethods = {
    resize(newLength) {
      if (!chargeBuffers) return apply(bufferResize, this, arguments);
      const before = apply(bufferLength, this, []);
      apply(bufferResize, this, arguments);
      try {
        charge(this);
      } catch (e) {
        apply(bufferResize, this, [before]);
        throw e;
      }
    },
    transfer() {
      // Past a resizable buffer's maximum: a RangeError on both engines (QuickJS threw a
      // TypeError).
      const newLength = arguments.length > 0 ? arguments[0] : undefined;
      if (typeof newLength === "number" && apply(bufferResizable, this, []) &&
          newLength > apply(bufferMaxLength, this, [])) {
        throw new RangeErrorRef("ArrayBuffer.prototype.transfer: Invalid length parameter");
      }
      const moved = apply(bufferTransfer, this, arguments);
      charge(moved);
      return moved;
    },
  };
  defineProperty(ArrayBuffer, "prototype", { value: BufferProto, writable: false });
  defineProperty(ArrayBuffer, "isView", getOwnPropertyDescriptor(BufferRef, "isView"));
  defineProperty(ArrayBuffer, Symbol.species, getOwnPropertyDescriptor(BufferRef, Symbol.species));
  defineProperty(BufferProto, "constructor", {
    value: ArrayBuffer, writable: true, enumerable: false, configurable: true,
  });
  for (const name of ["resize", "transfer"]) {
    defineProperty(BufferProto, name, {
      value: bufferMethods[name], writable: true, enumerable: false, configurable: true,
    });
  }
  defineProperty(g, "ArrayBuffer", {
    value: ArrayBuffer, writable: true, enumerable: false, configurable: true,
  });

  // The functions the prelude puts in place of intrinsics print as the engine prints its own
  // (`function resize() { [native code] }`), not as their source.
  const nativeText = apply(functionToString, BufferRef, []);
  const natives = new WeakMapRef();
  const toStringMethods = {
    toString() {
      const name = apply(weakGet, natives, [this]);
      if (name === undefined) return apply(functionToString, this, arguments);
      // Spliced by position: `replace` would look up `String.prototype[Symbol.replace]`, which
      // module code may have set.
      const at = apply(indexOf, nativeText, ["ArrayBuffer"]);
      return apply(slice, nativeText, [0, at]) + name + apply(slice, nativeText, [at + 11]);
    },
  };
  apply(weakSet, natives, [ArrayBuffer, "ArrayBuffer"]);
  apply(weakSet, natives, [bufferMethods.resize, "resize"]);
  apply(weakSet, natives, [bufferMethods.transfer, "transfer"]);
  apply(weakSet, natives, [toStringMethods.toString, "toString"]);
  defineProperty(Function.prototype, "toString", {
    value: toStringMethods.toString, writable: true, enumerable: false, configurable: true,
  });

  // The clock: `new Date()` is the epoch and `Date.now()` is 0. The real constructor is reachable
  // from nowhere: not as a global, not as `Date.prototype.constructor`, not through `super` or
  // `new.target`, not through a replaced `Reflect.construct`, and never from a stack frame:
  // module code (a `valueOf`, a `Symbol.toPrimitive`, a proxy as `new.target`) runs only in
  // `FixedDate`'s own frame, before the real constructor is called with primitives alone.
  function FixedDate(...args) {
    if (new.target === undefined) {
      return dateText(apply(dateToString, new RealDate(0), []));
    }
    // Two or more arguments are the fields of a date, numbered here (the prelude's `MakeDay`,
    // one rule on both engines); one is a time value, a date or a text.
    const values = args.length === 0 ? [0] : args.length > 1 ? [fieldsTime(args, 0)] : timeValues(args);
    if (values.length === 1 && typeof values[0] === "string") values[0] = parseDate(values[0]);
    let proto = new.target === FixedDate ? DateProto : new.target.prototype;
    if (proto === null || (typeof proto !== "object" && typeof proto !== "function")) {
      proto = DateProto;
    }
    const date = construct(RealDate, values);
    if (proto !== DateProto) setPrototypeOf(date, proto);
    return date;
  }
  // The arguments of `new Date(...)` made primitive the way the constructor itself would (a
  // Date gives its time value, one argument its default primitive, several their numbers).
  function timeValues(args) {
    const out = [];
    for (let i = 0; i < args.length; i++) {
      let v = args[i];
      if (v !== null && (typeof v === "object" || typeof v === "function")) {
        if (args.length === 1 && isDate(v)) {
          v = apply(dateGetTime, v, []);
        } else {
          v = toPrimitive(v, args.length === 1 ? "default" : "number");
        }
      }
      defineProperty(out, i, { value: v, writable: true, enumerable: true, configurable: true });
    }
    return out;
  }
  function isDate(v) {
    try { apply(dateGetTime, v, []); return true; } catch (_) { return false; }
  }
  function toPrimitive(v, hint) {
    const exotic = v[toPrimitiveKey];
    if (exotic !== undefined && exotic !== null) {
      if (typeof exotic !== "function") throw new TypeErrorRef("Symbol.toPrimitive is not a function");
      const r = apply(exotic, v, [hint]);
      if (r !== null && (typeof r === "object" || typeof r === "function")) {
        throw new TypeErrorRef("Cannot convert object to primitive value");
      }
      return r;
    }
    const order = hint === "string" ? ["toString", "valueOf"] : ["valueOf", "toString"];
    for (let i = 0; i < 2; i++) {
      const method = v[order[i]];
      if (typeof method === "function") {
        const r = apply(method, v, []);
        if (r === null || (typeof r !== "object" && typeof r !== "function")) return r;
      }
    }
    throw new TypeErrorRef("Cannot convert object to primitive value");
  }
  defineProperty(FixedDate, "prototype", {
    value: DateProto, writable: false, configurable: false, enumerable: false,
  });
  // A later addition (Temporal) that hands out a Temporal constructor; not an ES2025 intrinsic.
  delete DateProto.toTemporalInstant;
  defineProperty(DateProto, "constructor", {
    value: FixedDate, writable: true, configurable: true, enumerable: false,
  });
  defineProperty(FixedDate, "length", { value: 7 });
  defineProperty(FixedDate, "name", { value: "Date" });
  // Date strings, one answer on both engines. Parsing reads exactly the formats the
  // specification requires an engine to read back (those of `toISOString`, `toString` and
  // `toUTCString`); any other text is NaN, where the engines' own fallbacks disagree (V8 took
  // `2024-01-01T00:00:00z`, QuickJS did not). `toString` and `toTimeString` end at the offset
  // (V8 added ` (GMT)`), and the locale methods write the same texts.
  const MONTHS = "JanFebMarAprMayJunJulAugSepOctNovDec";
  const ISO_DATE = /^([+-]\d{6}|\d{4})(?:-(\d{2})(?:-(\d{2}))?)?(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?)?$/;
  const TO_STRING = /^(?:Sun|Mon|Tue|Wed|Thu|Fri|Sat) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (\d{2}) (-?\d{4,6}) (\d{2}):(\d{2}):(\d{2}) GMT([+-]\d{4})(?: \([^()]*\))?$/;
  const TO_UTC_STRING = /^(?:Sun|Mon|Tue|Wed|Thu|Fri|Sat), (\d{2}) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (-?\d{4,6}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
  function parseDate(text) {
    let m = apply(regexpExec, ISO_DATE, [text]);
    if (m !== null) {
      if (m[1] === "-000000") return NaN;
      const zone = m[8];
      let offset = 0;
      if (zone !== undefined && zone !== "Z") {
        const oh = +apply(slice, zone, [1, 3]);
        const om = +apply(slice, zone, [4, 6]);
        if (oh > 23 || om > 59) return NaN;
        offset = (oh * 60 + om) * (zone[0] === "-" ? -1 : 1);
      }
      const ms = m[7] === undefined ? 0 : +apply(slice, m[7] + "00", [0, 3]);
      return timeOf(+m[1], m[2] === undefined ? 1 : +m[2], m[3] === undefined ? 1 : +m[3],
        m[4] === undefined ? 0 : +m[4], m[5] === undefined ? 0 : +m[5], m[6] === undefined ? 0 : +m[6], ms, offset);
    }
    m = apply(regexpExec, TO_STRING, [text]);
    if (m !== null) {
      const zone = m[7];
      const oh = +apply(slice, zone, [1, 3]);
      const om = +apply(slice, zone, [3, 5]);
      if (oh > 23 || om > 59) return NaN;
      const offset = (oh * 60 + om) * (zone[0] === "-" ? -1 : 1);
      return timeOf(+m[3], apply(indexOf, MONTHS, [m[1]]) / 3 + 1, +m[2], +m[4], +m[5], +m[6], 0, offset);
    }
    m = apply(regexpExec, TO_UTC_STRING, [text]);
    if (m !== null) {
      return timeOf(+m[3], apply(indexOf, MONTHS, [m[2]]) / 3 + 1, +m[1], +m[4], +m[5], +m[6], 0, 0);
    }
    return NaN;
  }
  // The time value of a checked date and time at a UTC offset in minutes, or NaN: the local
  // time first, then the offset, then the range (as MakeDate, UTC and TimeClip do), in exact
  // integer arithmetic (days from the civil date by Howard Hinnant's `days_from_civil`).
  function timeOf(year, month, day, hour, minute, second, ms, offset) {
    const days = [31, (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if (month < 1 || month > 12 || day < 1 || day > days[month - 1] || minute > 59 || second > 59) return NaN;
    if (hour > 24 || (hour === 24 && (minute !== 0 || second !== 0 || ms !== 0))) return NaN;
    return timeClip(daysFromCivil(year, month, day) * 86400000 + ((hour * 60 + minute - offset) * 60 + second) * 1000 + ms);
  }
  // Days from 1970-01-01 to a civil date (month 1-12), exact for every integer year a double
  // holds (Howard Hinnant's `days_from_civil`).
  function daysFromCivil(year, month, day) {
    const y = month <= 2 ? year - 1 : year;
    const era = floor(y / 400);
    const yoe = y - era * 400;
    const doy = floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
    const doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy;
    return era * 146097 + doe - 719468;
  }
  // The fields of a time value: year, month (0-11), day of the month, hours, minutes, seconds,
  // milliseconds (its inverse, Hinnant's `civil_from_days`). Local time is UTC in the worker.
  function civil(t) {
    const days = floor(t / 86400000);
    let rest = t - days * 86400000;
    const z = days + 719468;
    const era = floor(z / 146097);
    const doe = z - era * 146097;
    const yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365);
    const doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100));
    const mp = floor((5 * doy + 2) / 153);
    const month = mp < 10 ? mp + 2 : mp - 10;
    const out = create(null);
    out[0] = yoe + era * 400 + (month <= 1 ? 1 : 0);
    out[1] = month;
    out[2] = doy - floor((153 * mp + 2) / 5) + 1;
    out[3] = floor(rest / 3600000);
    rest -= out[3] * 3600000;
    out[4] = floor(rest / 60000);
    rest -= out[4] * 60000;
    out[5] = floor(rest / 1000);
    out[6] = rest - out[5] * 1000;
    return out;
  }
  // The specification's date arithmetic (MakeTime, MakeDay, MakeDate, TimeClip, MakeFullYear),
  // one answer on both engines. MakeDay may answer NaN where no time value can hold the date;
  // runx takes V8's bounds for that, on both: a year within ±1,000,000 and a month within
  // ±10,000,000 before they are combined (QuickJS refused a year outside ±271,821 before
  // adding the days, so `Date.UTC(275761, 0, -400)` was NaN there and a date on V8).
  const finite = (x) => x - x === 0;
  const integer = (x) => trunc(x) + 0;
  function makeTime(h, m, s, ms) {
    if (!(finite(h) && finite(m) && finite(s) && finite(ms))) return NaN;
    return integer(h) * 3600000 + integer(m) * 60000 + integer(s) * 1000 + integer(ms);
  }
  function makeDay(year, month, date) {
    if (!(finite(year) && finite(month) && finite(date))) return NaN;
    if (!(year >= -1000000 && year <= 1000000 && month >= -10000000 && month <= 10000000)) return NaN;
    const m = trunc(month);
    const ym = trunc(year) + floor(m / 12);
    return daysFromCivil(ym, m - floor(m / 12) * 12 + 1, 1) - 1 + integer(date);
  }
  function makeDate(day, time) {
    if (!(finite(day) && finite(time))) return NaN;
    const tv = day * 86400000 + time;
    return finite(tv) ? tv : NaN;
  }
  function timeClip(t) {
    return finite(t) && t <= 8.64e15 && t >= -8.64e15 ? integer(t) : NaN;
  }
  function fullYear(y) {
    if (y !== y) return NaN;
    const t = integer(y);
    return t >= 0 && t <= 99 ? 1900 + t : y;
  }
  // The time value of fields given as arguments from `from` on (year, month, day, hours,
  // minutes, seconds, milliseconds; `new Date(y, m, ...)` and `Date.UTC`): each converted to a
  // number in order, absent ones 0 (the day 1; an absent year is NaN).
  function fieldsTime(args, from) {
    const f = create(null);
    for (let i = 0; i < 7; i++) {
      f[i] = i === 0 || from + i < args.length ? +args[from + i] : i === 2 ? 1 : 0;
    }
    return timeClip(makeDate(makeDay(fullYear(f[0]), f[1], f[2]), makeTime(f[3], f[4], f[5], f[6])));
  }
  // The setters: the fields from `first` on, as many as given up to `count`, each converted in
  // order, then the date made again from its fields (QuickJS kept the old time when a field was
  // NaN: `d.setMinutes(NaN)` left `d` as it was; the specification makes it an invalid date).
  const dateSetTime = DateProto.setTime;
  function setFields(date, args, first, count, kind) {
    let t = apply(dateGetTime, date, []);
    const given = create(null);
    const n = args.length === 0 ? 1 : args.length < count ? args.length : count;
    for (let i = 0; i < n; i++) given[i] = +args[i];
    if (t !== t) {
      if (kind === "time") return NaN;
      t = 0;
    }
    const f = civil(t);
    for (let i = 0; i < n; i++) f[first + i] = given[i];
    if (kind === "year") f[0] = fullYear(f[0]);
    const tv = timeClip(makeDate(makeDay(f[0], f[1], f[2]), makeTime(f[3], f[4], f[5], f[6])));
    apply(dateSetTime, date, [tv]);
    return tv;
  }
  const setters = {
    setMilliseconds(ms) { return setFields(this, arguments, 6, 1, "time"); },
    setSeconds(sec, ms) { return setFields(this, arguments, 5, 2, "time"); },
    setMinutes(min, sec, ms) { return setFields(this, arguments, 4, 3, "time"); },
    setHours(hour, min, sec, ms) { return setFields(this, arguments, 3, 4, "time"); },
    setDate(date) { return setFields(this, arguments, 2, 1, "time"); },
    setMonth(month, date) { return setFields(this, arguments, 1, 2, "time"); },
    setFullYear(year, month, date) { return setFields(this, arguments, 0, 3, "full"); },
    setYear(year) { return setFields(this, arguments, 0, 1, "year"); },
  };
  for (const name of ownKeys(setters)) {
    const method = setters[name];
    for (const key of name === "setYear" ? [name] : [name, "setUTC" + apply(slice, name, [3])]) {
      // The UTC setter is a function of its own, with its own name (local time is UTC here).
      const f = key === name ? method : { [key]() { return apply(method, this, arguments); } }[key];
      defineProperty(f, "length", { value: method.length });
      defineProperty(DateProto, key, {
        value: f, writable: true, configurable: true, enumerable: false,
      });
      apply(weakSet, natives, [f, key]);
    }
  }
  const utc = { UTC(year, month, date, hours, minutes, seconds, ms) { return fieldsTime(arguments, 0); } }.UTC;
  apply(weakSet, natives, [utc, "UTC"]);
  const parse = { parse(text) { return parseDate(`${text}`); } }.parse;
  // `toString`'s text without a time zone name after the offset.
  function dateText(text) {
    const open = apply(indexOf, text, [" ("]);
    return open === -1 ? text : apply(slice, text, [0, open]);
  }
  // No locale either: the `toLocale…String` methods write what `toString`, `toDateString` and
  // `toTimeString` write (V8 wrote `12/6/1166, 3:30:36 PM` where QuickJS wrote
  // `12/06/1166, 03:30:36 PM`).
  const dateMethods = {
    toString() { return dateText(apply(dateToString, this, [])); },
    toTimeString() { return dateText(apply(dateToTimeString, this, [])); },
    toLocaleString() { return dateText(apply(dateToString, this, [])); },
    toLocaleDateString() { return apply(dateToDateString, this, []); },
    toLocaleTimeString() { return dateText(apply(dateToTimeString, this, [])); },
  };
  for (const name of ["toString", "toTimeString", "toLocaleString", "toLocaleDateString", "toLocaleTimeString"]) {
    defineProperty(DateProto, name, {
      value: dateMethods[name], writable: true, configurable: true, enumerable: false,
    });
    apply(weakSet, natives, [dateMethods[name], name]);
  }
  apply(weakSet, natives, [parse, "parse"]);

  const now = { now() { return 0; } }.now;
  for (const [key, value] of [["now", now], ["parse", parse], ["UTC", utc]]) {
    defineProperty(FixedDate, key, {
      value, writable: true, configurable: true, enumerable: false,
    });
  }
  defineProperty(g, "Date", {
    value: FixedDate, writable: true, configurable: true, enumerable: false,
  });
  apply(weakSet, natives, [FixedDate, "Date"]);
  apply(weakSet, natives, [now, "now"]);

  // Numbers and text in other radices and locales, one answer on both engines:
  // - `toString(radix)` for radix other than 10: V8's digit algorithm (the shortest digits
  //   that read back as the same number) for a fraction, exact digits for an integer (V8
  //   filled the digits of integers from 2^53 up with zeros, QuickJS rounded them otherwise);
  // - no locale: `toLocaleString` of a number or BigInt is its `toString()`, and
  //   `localeCompare` orders the NFC forms of the strings by UTF-16 code units (V8 used ICU's
  //   collation for its default locale).
  const DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz";
  const bits = new DataViewRef(new BufferRef(8));
  // The next double above a finite `x >= 0`.
  function nextUp(x) {
    apply(setFloat64, bits, [0, x]);
    let low = apply(getUint32, bits, [4]) + 1;
    let high = apply(getUint32, bits, [0]);
    if (low === 0x100000000) { low = 0; high += 1; }
    apply(setUint32, bits, [4, low]);
    apply(setUint32, bits, [0, high]);
    return apply(getFloat64, bits, [0]);
  }
  function radixText(value, radix) {
    const negative = value < 0;
    if (negative) value = -value;
    let integer = floor(value);
    let fraction = value - integer;
    let delta = 0.5 * (nextUp(value) - value);
    if (!(delta > 5e-324)) delta = 5e-324;
    const digits = create(null);
    let count = 0;
    if (fraction >= delta) {
      do {
        fraction *= radix;
        delta *= radix;
        const digit = trunc(fraction);
        digits[count++] = digit;
        fraction -= digit;
        if ((fraction > 0.5 || (fraction === 0.5 && (digit & 1))) && fraction + delta > 1) {
          // Round up: carry through the digits written, into the integer part if need be.
          for (;;) {
            if (count === 0) { integer += 1; break; }
            const last = digits[--count];
            if (last + 1 < radix) { digits[count++] = last + 1; break; }
          }
          break;
        }
      } while (fraction >= delta);
    }
    let text = apply(bigintToString, BigIntRef(integer), [radix]);
    if (count > 0) {
      text += ".";
      for (let i = 0; i < count; i++) text += DIGITS[digits[i]];
    }
    return negative ? "-" + text : text;
  }
  const numberMethods = {
    toString(radix) {
      const x = apply(numberValueOf, this, []);
      if (radix === undefined) return apply(numberToString, x, []);
      let r = trunc(+radix);
      if (r !== r) r = 0;
      if (r < 2 || r > 36) throw new RangeErrorRef("toString() radix must be between 2 and 36");
      if (r === 10 || x !== x || x === Infinity || x === -Infinity ||
          (trunc(x) === x && x < 9007199254740992 && x > -9007199254740992)) {
        return apply(numberToString, x, [r]);
      }
      return radixText(x, r);
    },
    toLocaleString() { return apply(numberToString, apply(numberValueOf, this, []), []); },
  };
  const bigintMethods = {
    toLocaleString() { return apply(bigintToString, apply(bigintValueOf, this, []), []); },
  };
  const stringMethods = {
    localeCompare(that) {
      if (this === undefined || this === null) {
        throw new TypeErrorRef("String.prototype.localeCompare called on null or undefined");
      }
      const a = apply(normalize, `${this}`, ["NFC"]);
      const b = apply(normalize, `${that}`, ["NFC"]);
      return a < b ? -1 : a > b ? 1 : 0;
    },
    toLocaleLowerCase() {
      const locales = arguments[0];
      if (this === undefined || this === null) {
        throw new TypeErrorRef("String.prototype.toLocaleLowerCase called on null or undefined");
      }
      return localeCase(`${this}`, locales, false);
    },
    toLocaleUpperCase() {
      const locales = arguments[0];
      if (this === undefined || this === null) {
        throw new TypeErrorRef("String.prototype.toLocaleUpperCase called on null or undefined");
      }
      return localeCase(`${this}`, locales, true);
    },
  };
  // Case mapping by locale, one rule on both engines: Unicode's language-specific mappings
  // (SpecialCasing.txt) for the languages that have them, Turkish and Azerbaijani (`I` to `ı`,
  // `i` to `İ`, `İ` to `i`) and Lithuanian (a dot kept above `i` and `j` under other accents);
  // every other locale, and none, maps as `toLowerCase` and `toUpperCase` do. (V8 took ICU's
  // mappings, Greek upper case included; QuickJS ignored the locale.) `locales` is read as
  // ECMA-402 reads it: a tag or a list of tags, each structurally valid (else a RangeError),
  // the first one deciding.
  const toLowerCase = String.prototype.toLowerCase;
  const toUpperCase = String.prototype.toUpperCase;
  const codePointAt = String.prototype.codePointAt;
  const ObjectRef = Object;
  const LOCALE_TAG = /^(?:[a-z]{2,3}|[a-z]{5,8})(?:-[a-z]{4})?(?:-(?:[a-z]{2}|[0-9]{3}))?(?:-(?:[a-z0-9]{5,8}|[0-9][a-z0-9]{3}))*(?:-[0-9a-wy-z](?:-[a-z0-9]{2,8})+)*(?:-x(?:-[a-z0-9]{1,8})+)?$/i;
  const CASE_SPECIAL = /[IJij\u00cc\u00cd\u0128\u012e\u0130\u0307]/;
  const SOFT_DOTTED = /^\p{Soft_Dotted}$/u;
  function caseLanguage(locales) {
    if (locales === undefined) return "";
    let first;
    const check = (tag) => {
      if (apply(regexpExec, LOCALE_TAG, [tag]) === null) {
        throw new RangeErrorRef(`Incorrect locale information provided: ${tag}`);
      }
      if (first === undefined) first = tag;
    };
    if (typeof locales === "string") {
      check(locales);
    } else {
      if (locales === null) throw new TypeErrorRef("Cannot convert undefined or null to object");
      const list = ObjectRef(locales);
      let length = +list.length;
      length = length > 0 ? floor(length > 9007199254740991 ? 9007199254740991 : length) : 0;
      for (let k = 0; k < length; k++) {
        if (!(k in list)) continue;
        const value = list[k];
        if (typeof value !== "string" && typeof value !== "object" && typeof value !== "function" ||
            value === null) {
          throw new TypeErrorRef("Language ID should be string or object.");
        }
        check(`${value}`);
      }
    }
    if (first === undefined) return "";
    const dash = apply(indexOf, first, ["-"]);
    return apply(toLowerCase, dash === -1 ? first : apply(slice, first, [0, dash]), []);
  }
  // Canonical combining class 0, 230 or another, as the engine's own normalization orders
  // marks: a mark of class c moves before U+0300 (230) when 0 < c < 230, after it when c > 230,
  // and before U+0345 (240, the highest) whenever c is not 0. A character that decomposes has
  // the class of the first character of its decomposition.
  function combiningClass(text) {
    const d = apply(normalize, text, ["NFD"]);
    const c = apply(slice, d, [0, apply(codePointAt, d, [0]) > 0xffff ? 2 : 1]);
    if (c !== "\u0345" && apply(normalize, "\u0345" + c, ["NFD"]) === "\u0345" + c) return 0;
    if (apply(normalize, "\u0300" + c, ["NFD"]) !== "\u0300" + c) return 1;
    return apply(normalize, c + "\u0300", ["NFD"]) !== c + "\u0300" ? 231 : 230;
  }
  function localeCase(text, locales, upper) {
    const language = caseLanguage(locales);
    const mapped = apply(upper ? toUpperCase : toLowerCase, text, []);
    const turkic = language === "tr" || language === "az";
    if ((!turkic && language !== "lt") || apply(regexpExec, CASE_SPECIAL, [text]) === null) {
      return mapped;
    }
    // The code points, each with where its default mapping starts in `mapped` (every default
    // mapping but the final sigma's is a function of the code point alone, and that one keeps
    // its length).
    const points = create(null);
    let count = 0;
    for (let i = 0; i < text.length; ) {
      const cp = apply(codePointAt, text, [i]);
      const width = cp > 0xffff ? 2 : 1;
      points[count++] = apply(slice, text, [i, i + width]);
      i += width;
    }
    // Scans from code point `at` in `step` for `found`, through marks that are neither of class
    // 0 nor 230 (the contexts of SpecialCasing: After_I, After_Soft_Dotted, Before_Dot, More_Above,
    // whose `found` is a mark of class 230 itself).
    const scan = (at, step, found) => {
      for (let k = at + step; k >= 0 && k < count; k += step) {
        if (found(points[k])) return true;
        const cc = combiningClass(points[k]);
        if (cc === 0 || cc === 230) return false;
      }
      return false;
    };
    const isI = (c) => c === "I";
    const isDot = (c) => c === "\u0307";
    const softDotted = (c) => apply(regexpExec, SOFT_DOTTED, [c]) !== null;
    const above = (c) => combiningClass(c) === 230;
    let out = "";
    let at = 0;
    for (let k = 0; k < count; k++) {
      const c = points[k];
      const width = apply(upper ? toUpperCase : toLowerCase, c, []).length;
      let special;
      if (turkic && !upper) {
        if (c === "\u0130") special = "i";
        else if (c === "\u0307" && scan(k, -1, isI)) special = "";
        else if (c === "I" && !scan(k, 1, isDot)) special = "\u0131";
      } else if (turkic) {
        if (c === "i") special = "\u0130";
      } else if (!upper) {
        const more = () => scan(k, 1, above);
        if (c === "I" && more()) special = "i\u0307";
        else if (c === "J" && more()) special = "j\u0307";
        else if (c === "\u012e" && more()) special = "\u012f\u0307";
        else if (c === "\u00cc") special = "i\u0307\u0300";
        else if (c === "\u00cd") special = "i\u0307\u0301";
        else if (c === "\u0128") special = "i\u0307\u0303";
      } else if (c === "\u0307" && scan(k, -1, softDotted)) {
        special = "";
      }
      out += special === undefined ? apply(slice, mapped, [at, at + width]) : special;
      at += width;
    }
    return out;
  }
  // Sorting a frozen array: the specification writes every element back with a Set that
  // throws, so an array that is frozen and holds an element throws a TypeError, after the
  // comparator has run as for any array (QuickJS skipped the writes of an array already in
  // order, V8 those of an array of one element).
  const arraySort = Array.prototype.sort;
  const arraySlice = Array.prototype.slice;
  const isExtensible = Object.isExtensible;
  const isFrozen = Object.isFrozen;
  const arrayMethods = {
    sort(comparefn) {
      if ((comparefn === undefined || typeof comparefn === "function") && isArray(this) &&
          !isExtensible(this) && isFrozen(this)) {
        const length = this.length;
        for (let i = 0; i < length; i++) {
          if (i in this) {
            apply(arraySort, apply(arraySlice, this, []), [comparefn]);
            throw new TypeErrorRef(`Cannot assign to read only property '${i}' of a frozen array`);
          }
        }
      }
      return apply(arraySort, this, arguments);
    },
  };
  for (const [proto, methods] of [
    [Number.prototype, numberMethods], [BigInt.prototype, bigintMethods], [String.prototype, stringMethods],
    [Array.prototype, arrayMethods],
  ]) {
    for (const name of ownKeys(methods)) {
      defineProperty(proto, name, {
        value: methods[name], writable: true, configurable: true, enumerable: false,
      });
      apply(weakSet, natives, [methods[name], name]);
    }
  }

  // What only one engine has, removed so that a module sees the same intrinsics on both:
  // V8's legacy RegExp statics, QuickJS's proposals not in ES2025 and its function positions,
  // and the global object's own tag (QuickJS names it "global").
  for (const [holder, names] of [
    [RegExp, ["$1", "$2", "$3", "$4", "$5", "$6", "$7", "$8", "$9", "input", "$_", "lastMatch",
      "$&", "lastParen", "$+", "leftContext", "$`", "rightContext", "$'"]],
    [Iterator.prototype, ["chunks", "windows", "join", "includes"]],
    [Iterator, ["zip", "zipKeyed"]],
    [BufferProto, ["immutable", "sliceToImmutable", "transferToImmutable"]],
    [Function.prototype, ["fileName", "lineNumber", "columnNumber"]],
    [g, [Symbol.toStringTag]],
  ]) {
    for (const name of names) delete holder[name];
  }

  // No structured stack traces: a `prepareStackTrace` hook would hand module code the function
  // of every frame on the stack (QuickJS hands out even strict ones), whatever it is. The hook
  // stays assignable, so code that sets it still runs, and `stack` stays the usual string.
  const stackHook = {
    get prepareStackTrace() { return undefined; },
    set prepareStackTrace(_) { /* ignored */ },
  };
  const hook = getOwnPropertyDescriptor(stackHook, "prepareStackTrace");
  apply(weakSet, natives, [hook.get, "get prepareStackTrace"]);
  apply(weakSet, natives, [hook.set, "set prepareStackTrace"]);
  defineProperty(ErrorRef, "prepareStackTrace", {
    get: hook.get, set: hook.set, configurable: false, enumerable: false,
  });

  // Math: where the engine's own functions differ from the shared ones (`engine/math.rs`), the
  // engine hands the shared ones in `math` (V8); QuickJS already calls them.
  if (math !== undefined) {
    for (const name of ownKeys(math)) {
      defineProperty(Math, name, {
        value: math[name], writable: true, configurable: true, enumerable: false,
      });
    }
  }

  const random = {
    random() {
      throw new TypeErrorRef(
        "Math.random() is unavailable in deterministic modules: derive values from the inputs instead"
      );
    },
  }.random;
  apply(weakSet, natives, [random, "random"]);
  defineProperty(Math, "random", {
    value: random, writable: true, configurable: true, enumerable: false,
  });

  // Console: arguments formatted like JSON.stringify (strings as they are), joined by spaces,
  // lone surrogates replaced by U+FFFD. Logging never throws into the module: a value that
  // cannot be formatted prints as `[unprintable]`. (A stopped call is not an exception a
  // `catch` can see, so the wall still ends a call that logs.)
  const format = (v) => {
    try {
      if (typeof v === "string") return v;
      const s = stringify(v);
      return s === undefined ? StringRef(v) : s;
    } catch (_) {
      try { return StringRef(v); } catch (_) { return "[unprintable]"; }
    }
  };
  // A line too large to copy (its well-formed copy, or its text crossing to the host, ran out
  // of memory: a string of 32 MiB in a 64 MiB heap) is counted as dropped, by its UTF-8 bytes
  // (a lone surrogate as the three of U+FFFD), never lost without a count.
  const NOT_ASCII = /[^\x00-\x7f]/;
  function utf8Bytes(text) {
    if (apply(regexpExec, NOT_ASCII, [text]) === null) return text.length;
    let bytes = 0;
    for (let i = 0; i < text.length; i++) {
      const c = apply(charCodeAt, text, [i]);
      if (c < 0x80) bytes += 1;
      else if (c < 0x800) bytes += 2;
      else if (c >= 0xd800 && c <= 0xdbff && (apply(charCodeAt, text, [i + 1]) & 0xfc00) === 0xdc00) {
        bytes += 4;
        i++;
      } else bytes += 3;
    }
    return bytes;
  }
  const writer = (level) => function (...args) {
    let text;
    try {
      // One argument is its own text, with no copy made of it.
      text = args.length === 1 ? format(args[0]) : "";
      for (let i = 0; i < args.length && args.length > 1; i++) {
        text += (i === 0 ? "" : " ") + format(args[i]);
      }
      sink(level, apply(isWellFormed, text, []) ? text : apply(toWellFormed, text, []));
    } catch (_) {
      // The host's sink takes any well-formed string: what fails is memory, and then the line
      // is counted without its text.
      try {
        if (typeof text === "string") sink(level, null, utf8Bytes(text));
      } catch (_) {
        // Nothing is left to count it with; the call goes on.
      }
    }
  };
  const console = {
    log: writer("log"), info: writer("info"), warn: writer("warn"),
    error: writer("error"), debug: writer("debug"),
  };
  for (const level of ownKeys(console)) {
    defineProperty(console[level], "name", { value: level });
    apply(weakSet, natives, [console[level], level]);
  }
  defineProperty(g, "console", {
    value: console, writable: true, configurable: true, enumerable: false,
  });

  // Runx: runx's one global of its own, `Runx.parseUrl(text)` (`engine/url.rs`), installed as
  // runx's worker installs it: a frozen object whose one property, a frozen function, can be
  // neither enumerated nor replaced, under a global that can be neither. The text is converted
  // as runx converts it (`ToString`: a symbol throws), lone surrogates become U+FFFD, and the
  // host parses it: `url` answers one string, a newline and the four parts each after a
  // newline, or the message of the TypeError. The parts are cut by position (`split` would
  // look up `String.prototype[Symbol.split]`, which module code may have set).
  const URL_UNITS = 4194304;
  const parseUrl = {
    parseUrl(input) {
      const text = `${input}`;
      if (text.length > URL_UNITS) {
        throw new TypeErrorRef(`Runx.parseUrl takes a text of at most ${URL_UNITS} characters`);
      }
      const answer = url(apply(toWellFormed, text, []));
      if (typeof answer !== "string" || apply(charCodeAt, answer, [0]) !== 10) {
        throw new TypeErrorRef(typeof answer === "string" ? answer : "Runx.parseUrl failed");
      }
      let at = 1;
      const next = () => {
        const end = apply(indexOf, answer, ["\n", at]);
        const stop = end === -1 ? answer.length : end;
        const part = apply(slice, answer, [at, stop]);
        at = stop + 1;
        return part;
      };
      const href = next();
      const origin = next();
      const protocol = next();
      const hostname = next();
      return { href, origin, protocol, hostname };
    },
  }.parseUrl;
  apply(weakSet, natives, [parseUrl, "parseUrl"]);
  const Runx = {};
  defineProperty(Runx, "parseUrl", {
    value: freeze(parseUrl), writable: false, configurable: false, enumerable: false,
  });
  defineProperty(g, "Runx", {
    value: freeze(Runx), writable: false, configurable: false, enumerable: false,
  });

  // Output: the export's return value becomes exactly the text `JSON.stringify` makes of it
  // (toJSON honoured, undefined, functions and symbols dropped from objects and null in
  // arrays, NaN and Infinity null, boxed primitives unwrapped, a Map `{}`), except for what
  // JSON cannot carry faithfully: a cycle, a BigInt, a lone surrogate in a string or a property
  // name, or nesting deeper than `maxDepth` objects and arrays. Those come back as
  // `{code, message}` naming the first offending path; the text comes back as a string. An
  // output that cannot fit in `maxBytes` is refused as it is walked, before the text is made:
  // each value counts at least one byte, a string its length (a UTF-16 unit is at least one
  // UTF-8 byte) and a property name its length plus three; the host checks the exact size (a
  // boxed String is not counted here: reading its text could run module code).
  // `JSON.stringify` calls the replacer on every value after its toJSON, in document order, with
  // the holder as `this`, so the replacer can keep the path and depth of each object it lets
  // through and refuse before the native serializer goes on.
  function encode(value, maxDepth, maxBytes) {
    const nodes = new MapRef(); // object → { parent, key, depth, array }
    const chain = create(null); // chain[d]: the object at depth d on the current path
    const top = { parent: null, key: null, depth: 0, array: false };
    let problem = null;
    let first = true;
    let topType = "undefined";
    let atLeast = 0;
    function refuse(code, holder, key, what) {
      problem = freeze({ code, message: `${pathOf(holder, key)} ${what}` });
      throw problem;
    }
    function replacer(key, v) {
      let holder = top;
      if (first) {
        first = false;
        topType = v === null ? "null" : typeof v;
      } else {
        holder = apply(mapGet, nodes, [this]);
      }
      const t = typeof v;
      if (t === "undefined" || t === "function" || t === "symbol") return v;
      atLeast += 1;
      if (holder !== top && !holder.array) atLeast += key.length + 3;
      if (t === "string") atLeast += v.length;
      if (atLeast > maxBytes) {
        refuse("output_bytes", holder, key, `makes the output longer than ${maxBytes} bytes`);
      }
      if (holder !== top && !holder.array && !apply(isWellFormed, key, [])) {
        refuse("output_rejected", holder, key, "has a property name with a lone surrogate, which UTF-8 cannot encode");
      }
      if (t === "string") {
        if (!apply(isWellFormed, v, [])) {
          refuse("output_rejected", holder, key, `is a string with a lone surrogate (${loneSurrogate(v)}), which UTF-8 cannot encode`);
        }
      } else if (t === "bigint") {
        refuse("output_rejected", holder, key, "is a BigInt; convert it to a string or number");
      } else if (t === "object" && v !== null) {
        for (let d = 1; d <= holder.depth; d++) {
          if (chain[d] === v) {
            const at = apply(mapGet, nodes, [v]);
            refuse("output_rejected", holder, key, `is a cycle back to ${pathOf(at.parent, at.key)}`);
          }
        }
        const depth = holder.depth + 1;
        // A boxed primitive is written as its value and nests nothing.
        if (depth > maxDepth && !boxed(v)) {
          refuse("output_depth", holder, key, `nests deeper than ${maxDepth} levels of objects and arrays`);
        }
        chain[depth] = v;
        apply(mapSet, nodes, [v, { parent: holder, key, depth, array: isArray(v) }]);
      }
      return v;
    }
    let text;
    try {
      text = stringify(value, replacer);
    } catch (e) {
      if (problem !== null && e === problem) return problem;
      throw e;
    }
    if (text === undefined) {
      return freeze({ code: "output_rejected", message: `output is ${topType}; the export must return an object` });
    }
    // A boxed String's text is not seen by the replacer; JSON.stringify writes a lone
    // surrogate in it as an escape, and any such escape in its text is one.
    if (hasLoneSurrogateEscape(text)) {
      return freeze({ code: "output_rejected", message: "output holds a string with a lone surrogate, which UTF-8 cannot encode" });
    }
    return text;
  }

  // Whether `text` (JSON.stringify's) holds an escape `\uD800`–`\uDFFF`: it writes paired
  // surrogates as they are and escapes only lone ones.
  function hasLoneSurrogateEscape(text) {
    let at = apply(indexOf, text, ["\\u"]);
    while (at !== -1) {
      let slashes = 0;
      for (let i = at; i >= 0 && apply(charCodeAt, text, [i]) === 92; i--) slashes++;
      const d = apply(charCodeAt, text, [at + 2]);
      const x = apply(charCodeAt, text, [at + 3]);
      if (slashes % 2 === 1 && (d === 100 || d === 68) &&
          ((x >= 56 && x <= 57) || (x >= 97 && x <= 102) || (x >= 65 && x <= 70))) {
        return true;
      }
      at = apply(indexOf, text, ["\\u", at + 2]);
    }
    return false;
  }

  // Whether `v` is a Number, String or Boolean object, which JSON writes as its primitive.
  function boxed(v) {
    try { apply(numberValueOf, v, []); return true; } catch (_) { /* not a Number */ }
    try { apply(stringValueOf, v, []); return true; } catch (_) { /* not a String */ }
    try { apply(booleanValueOf, v, []); return true; } catch (_) { /* not a Boolean */ }
    return false;
  }

  function loneSurrogate(s) {
    for (let i = 0; i < s.length; i++) {
      const c = apply(charCodeAt, s, [i]);
      if (c >= 0xd800 && c <= 0xdbff) {
        const next = apply(charCodeAt, s, [i + 1]);
        if (next >= 0xdc00 && next <= 0xdfff) { i++; continue; }
      } else if (c < 0xdc00 || c > 0xdfff) {
        continue;
      }
      return `U+${HEX[c >> 12]}${HEX[(c >> 8) & 15]}${HEX[(c >> 4) & 15]}${HEX[c & 15]} at index ${i}`;
    }
    return "?";
  }

  // `output.a[2]["b c"]` for the property `key` of the object described by `holder`; property
  // names are shortened and made well-formed so that the message itself can always be sent.
  function pathOf(holder, key) {
    if (holder.parent === null) return "output";
    return pathOf(holder.parent, holder.key) + segment(holder, key);
  }

  function segment(holder, key) {
    if (holder.array) return `[${key}]`;
    let name = apply(toWellFormed, key, []);
    if (name.length > 40) name = apply(slice, name, [0, 40]) + "…";
    let plain = name.length > 0;
    for (let i = 0; i < name.length && plain; i++) {
      const c = apply(charCodeAt, name, [i]);
      plain = c === 36 || c === 95 || (c >= 97 && c <= 122) || (c >= 65 && c <= 90) ||
        (i > 0 && c >= 48 && c <= 57);
    }
    return plain ? `.${name}` : `[${stringify(name)}]`;
  }

  function context(environment) {
    return freeze({ environment: freeze(environment) });
  }

  // What an export is, for the engine to refuse what a runner cannot call (a probe reports it
  // to `runx skill check`): `typeof` for a value that is not a function; for a function,
  // "class" (its source text starts with `class`: calling one throws), "generator function"
  // and "async generator function" (calling one returns an iterator, never the output),
  // "async function", else "function".
  const getPrototypeOf = Object.getPrototypeOf;
  const GENERATOR = getPrototypeOf(function* () { /* a generator function's prototype */ });
  const ASYNC_GENERATOR = getPrototypeOf(async function* () { /* its async form's */ });
  const ASYNC = getPrototypeOf(async function () { /* an async function's */ });
  function kind(value) {
    const type = typeof value;
    if (type !== "function") return value === null ? "null" : type;
    // A class's `prototype` is not writable (a function's is, an arrow function has none):
    // only then is its text read, which may be long, and runs before every call.
    let text = "";
    try {
      const own = getOwnPropertyDescriptor(value, "prototype");
      if (own !== undefined && own.writable === false) text = apply(functionToString, value, []);
    } catch (_) {
      // A proxy whose trap throws: a function to call like any other.
    }
    if (apply(slice, text, [0, 5]) === "class") {
      // A method named `class` prints as `class() {}`: the keyword is followed by a name,
      // `extends`, a body or a comment, never by `(`.
      let at = 5;
      for (;;) {
        const c = apply(charCodeAt, text, [at]);
        if (c === 32 || c === 9 || c === 10 || c === 13) { at++; continue; }
        if (c === 47 && apply(charCodeAt, text, [at + 1]) === 42) {
          const end = apply(indexOf, text, ["*/", at + 2]);
          at = end === -1 ? text.length : end + 2;
          continue;
        }
        if (c === 47 && apply(charCodeAt, text, [at + 1]) === 47) {
          const end = apply(indexOf, text, ["\n", at + 2]);
          at = end === -1 ? text.length : end + 1;
          continue;
        }
        if (c !== 40 && at < text.length) return "class";
        break;
      }
    }
    let proto;
    try { proto = getPrototypeOf(value); } catch (_) { return "function"; }
    if (proto === GENERATOR) return "generator function";
    if (proto === ASYNC_GENERATOR) return "async generator function";
    if (proto === ASYNC) return "async function";
    return "function";
  }

  const helpers = create(null);
  helpers.encode = encode;
  helpers.context = context;
  helpers.kind = kind;
  return freeze(helpers);
})
