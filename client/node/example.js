// halfspace from Node, with @grpc/grpc-js and @grpc/proto-loader (npm): the
// API's proto is loaded at run time, nothing is generated.
//
//   npm install @grpc/grpc-js @grpc/proto-loader
//   node client/node/example.js [TARGET]      (default localhost:50051)
//
// It creates a perceptron "notes-node" (deleting one left by an earlier
// run), trains it over a stream, predicts, and prints what the Python
// example in the README prints.

'use strict';

const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const definition = protoLoader.loadSync('halfspace/v1/halfspace.proto', {
  includeDirs: [path.join(__dirname, '..', '..', 'proto')],
  // Field names as the proto spells them: without keepCase the loader
  // expects endOfPass, and a request that sets end_of_pass has it ignored.
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
});
const v1 = grpc.loadPackageDefinition(definition).halfspace.v1;

// The metadata of a call about `model`: the header a sharding proxy routes
// by (see the README's "More than one machine").
function about(model) {
  const metadata = new grpc.Metadata();
  metadata.set('halfspace-model', model);
  return metadata;
}

// A unary call about request.model, as a promise.
function call(client, method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, about(request.model), (error, response) =>
      error ? reject(error) : resolve(response));
  });
}

// Sends `examples` ({x, y}) on one Train stream in one message; resolves to
// their results.
function train(client, model, examples) {
  return new Promise((resolve, reject) => {
    const results = [];
    const stream = client.Train(about(model));
    stream.on('data', (response) => results.push(...response.results));
    stream.on('error', reject);
    stream.on('end', () => resolve(results));
    stream.write({
      model,
      examples: examples.map(({x, y}) => ({features: {dense: x}, label: y})),
    });
    stream.end();
  });
}

async function main(target) {
  const client = new v1.HalfspaceService(
      target, grpc.credentials.createInsecure());
  const model = 'notes-node';
  // Start afresh, so that the example can be run again.
  await call(client, 'DeleteModel', {model}).catch((error) => {
    if (error.code !== grpc.status.NOT_FOUND) throw error;
  });
  await call(client, 'CreateModel', {
    model, dimension: 2, algorithm: {perceptron: {}},
  });
  const results = await train(client, model, [
    {x: [1, 2], y: 1}, {x: [2, 1], y: -1}, {x: [0, 0], y: -1},
  ]);
  for (const r of results) {
    console.log(`score=${r.score} margin=${r.margin} updated=${r.updated}`);
  }
  const {predictions} = await call(client, 'Predict', {
    model, instances: [{dense: [1, 2]}, {dense: [3, 0]}],
  });
  for (const p of predictions) {
    const label = p.label > 0 ? `+${p.label}` : `${p.label}`;
    console.log(`label=${label} score=${p.score} ` +
                `distance=${p.signed_distance.toFixed(4)}`);
  }
  const {model: info} = await call(client, 'GetModel', {model});
  console.log(`updates=${info.stats.updates}`);
  client.close();
}

main(process.argv[2] || 'localhost:50051').catch((error) => {
  console.error(`${error.code !== undefined ? grpc.status[error.code] : ''} ` +
                `${error.details || error.message}`);
  process.exit(1);
});
