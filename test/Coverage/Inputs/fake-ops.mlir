// pf.reduce_sum round-trips; pf.reduce appears only as a prefix of it.
// CHECK: pf.reduce_sum
%0 = pf.reduce_sum %x
// pf.send is written but never checked.
pf.send %0 to 1 tag 0
// CHECK: pf.recv
