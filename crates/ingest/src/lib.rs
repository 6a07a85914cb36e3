//! Live inputs for brdyun: MPEG-TS pulled over HTTP(S), MPEG-TS over UDP (unicast and
//! multicast), RTMP publish, and the supervisor that switches between backup inputs.
