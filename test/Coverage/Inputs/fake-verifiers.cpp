LogicalResult FooOp::verify() {
  if (a)
    return emitOpError("covered message");
  if (b)
    return emitOpError("split "
                       "literal ")
           << x << " with a value";
  if (c)
    return op->emitOpError() << "streamed " << y << " message; "
                             << "never tested";
  return emitError(getLoc(), "unlocated but covered");
}
