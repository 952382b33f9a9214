-- Car, fastest: the stock car profile (weight 'routability': duration with penalties).
local Wrap = require('rs_wrap')
return Wrap.profile('car', {})
