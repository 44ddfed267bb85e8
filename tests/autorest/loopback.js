// Preloaded (`node --require`) into the AutoRest test server: its CLI listens on every
// interface (`app.listen(port)`), so every server this process opens is bound to 127.0.0.1
// instead, and the port it got is printed for the tests to read.
"use strict";
const net = require("net");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  this.once("listening", () => {
    const address = this.address();
    process.stdout.write(`JOBTRAIL-LOOPBACK ${address.address} ${address.port}\n`);
  });
  if (args.length > 0 && typeof args[0] === "object" && args[0] !== null) {
    args[0] = { ...args[0], host: "127.0.0.1" };
    return listen.apply(this, args);
  }
  const port = Number(args[0] || 0);
  const callbacks = args.filter((arg) => typeof arg === "function");
  return listen.call(this, port, "127.0.0.1", ...callbacks);
};
