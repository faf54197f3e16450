// expected-error @+1 {{'pf.foo' op covered message}}
// expected-error @below {{'pf.foo' op split literal 42 with a value}}
// expected-error {{unlocated but covered}}
// expected-error @+1 {{'pf.foo' op streamed 3 message;}}
