-- Car, shortest: the stock car profile weighted by distance.
local Wrap = require('rs_wrap')
return Wrap.profile('car', {Wrap.shortest})
