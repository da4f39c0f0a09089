// Preloaded (node --import) into peers that listen on every interface by
// default, such as server-everything's HTTP modes: a listen() given only a
// port binds 127.0.0.1, so tests never expose a server beyond the machine.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  if ((typeof port === 'number' || (typeof port === 'string' && /^\d+$/.test(port))) &&
      typeof args[1] !== 'string') {
    args.splice(1, 0, '127.0.0.1');
  }
  return listen.apply(this, args);
};
